// The streaming applications on small fixed inputs, run to completion
// (--passes), against independent sequential references; and their flags.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "wc/wc.hpp"

namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream{path} << text;
  return path;
}

std::vector<char*> args(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  return out;
}

troupe_apps::cli parse(std::vector<std::string> v) {
  v.insert(v.begin(), "prog");
  auto a = args(v);
  return troupe_apps::cli::parse(static_cast<int>(a.size()), a.data(), troupe_apps::wc::operators, "default.txt");
}

}  // namespace

TEST(apps_cli, flags_are_parsed_and_bad_ones_named) {
  auto c = parse({"--duration", "2.5", "--rate", "1000", "--parallelism", "1,2,3,1", "--input", "x", "--batch", "64",
                  "--json", "r.json", "--passes", "3", "--output", "o.txt"});
  EXPECT_EQ(c.duration, 2.5);
  EXPECT_EQ(c.rate, 1000);
  EXPECT_EQ(c.replicas(2), 3u);
  EXPECT_EQ(c.input, "x");
  EXPECT_EQ(c.batch, 64u);
  EXPECT_EQ(c.passes, 3u);
  EXPECT_EQ(parse({}).input, "default.txt");
  EXPECT_EQ(parse({}).duration, 10);
  EXPECT_EQ(parse({"--passes", "1"}).duration, 0);
  auto message = [](std::vector<std::string> v) {
    try {
      parse(std::move(v));
    } catch (const troupe_apps::usage_error& e) {
      return std::string{e.what()};
    }
    return std::string{"no error"};
  };
  EXPECT_EQ(message({"--rate", "fast"}), "--rate: expected a number, got 'fast'");
  EXPECT_EQ(message({"--duration", "-1"}), "--duration: must not be negative, got '-1'");
  EXPECT_EQ(message({"--parallelism", "1,2"}), "--parallelism: expected 4 numbers (one per operator), got '1,2'");
  EXPECT_EQ(message({"--parallelism", "1,0,1,1"}),
            "--parallelism: every operator needs at least 1 replica, got '1,0,1,1'");
  EXPECT_EQ(message({"--frobnicate", "1"}), "unknown flag '--frobnicate'");
  EXPECT_EQ(message({"--json"}), "--json: missing value");
  EXPECT_EQ(message({"--batch", "0"}), "--batch: must be at least 1");
  EXPECT_THROW(troupe_apps::read_lines("/nonexistent/input.txt"), std::runtime_error);
}

TEST(apps_wc, counts_equal_a_sequential_reference) {
  const std::string text = "the cat  sat on the mat\nthe end\n\n a b a b a\nunicode: \xc3\xa9t\xc3\xa9 \xc3\xa9t\xc3\xa9\n";
  const auto path = write_file("wc_input.txt", text);
  // Reference: split each line on single spaces, skip empty tokens.
  std::map<std::string, std::uint64_t> want;
  std::uint64_t words = 0;
  {
    std::istringstream in{text};
    for (std::string line; std::getline(in, line);) {
      std::size_t from = 0;
      while (from <= line.size()) {
        auto to = line.find(' ', from);
        if (to == std::string::npos) to = line.size();
        if (to > from) ++want[line.substr(from, to - from)], ++words;
        from = to + 1;
      }
    }
  }
  for (auto& [w, n] : want) n *= 3;  // three passes
  for (std::string par : {"1,1,1,1", "2,2,3,2"}) {
    SCOPED_TRACE(par);
    troupe::actor_system sys{troupe::config{}.workers(2)};
    const auto out = write_file("wc_output.txt", "");
    auto c = parse({"--input", path, "--passes", "3", "--parallelism", par, "--output", out});
    auto r = troupe_apps::wc::run(sys, c);
    const std::uint64_t sources = c.replicas(0);
    std::map<std::string, std::uint64_t> scaled = want;
    for (auto& [w, n] : scaled) n *= sources;
    EXPECT_EQ(r.final_counts, scaled);
    EXPECT_EQ(r.result.sink_tuples, 3 * words * sources);
    EXPECT_EQ(r.result.source_tuples, 3 * 5 * sources);  // 5 lines
    EXPECT_EQ(r.result.latency.count(), r.result.sink_tuples);
    // The output file: one line per sink tuple, then the final counts.
    std::ifstream f{out};
    std::uint64_t lines = 0, finals = 0;
    bool in_finals = false;
    for (std::string l; std::getline(f, l);) {
      if (l == "# final counts") in_finals = true;
      else if (in_finals) ++finals;
      else ++lines;
    }
    EXPECT_EQ(lines, r.result.sink_tuples);
    EXPECT_EQ(finals, want.size());
  }
}

// ---------------------------------------------------------------- fraud detection

#include "fd/fd.hpp"

TEST(apps_fd, outliers_equal_a_sequential_reference) {
  const auto m = troupe_apps::fd::model::load(TROUPE_APPS_DATA "/fd_model.txt");
  auto lines = troupe_apps::fd::generate(5000, 40, m, 7);
  lines.insert(lines.begin() + 10, "bad line");
  lines.insert(lines.begin() + 20, "ABC,123,LNL");  // short transaction id
  lines.insert(lines.begin() + 30, "ABC,123456789012,XYZ");  // unknown state
  std::string text;
  for (auto& l : lines) text += l + '\n';
  const auto path = write_file("fd_input.txt", text);

  // Reference: per customer, the last 5 states, in input order.
  std::set<std::string> want;
  std::map<std::string, std::vector<int>> hist;
  for (auto& l : lines) {
    std::stringstream in{l};
    std::string cust, id, state;
    std::getline(in, cust, ',');
    std::getline(in, id, ',');
    std::getline(in, state);
    const int s = m.index(state);
    if (cust.size() != 3 || id.size() != 12 || s < 0) continue;
    auto& h = hist[cust];
    h.push_back(s);
    if (h.size() < 5) continue;
    double miss = 0;
    for (std::size_t i = h.size() - 4; i < h.size(); ++i) miss += 1.0 - m.p[h[i - 1]][h[i]];
    if (miss / 4 > 0.96) want.insert(id);
  }
  ASSERT_FALSE(want.empty());
  for (std::string par : {"1,1,1", "1,3,2"}) {
    SCOPED_TRACE(par);
    troupe::actor_system sys{troupe::config{}.workers(2)};
    std::vector<std::string> v{"prog", "--input", path, "--passes", "1", "--parallelism", par};
    auto a = args(v);
    auto c = troupe_apps::cli::parse(static_cast<int>(a.size()), a.data(), troupe_apps::fd::operators, "",
                                     {{"model", TROUPE_APPS_DATA "/fd_model.txt"}});
    auto r = troupe_apps::fd::run(sys, c);
    EXPECT_EQ(r.outliers, want);
    EXPECT_EQ(r.result.malformed, 3u);
    EXPECT_EQ(r.result.source_tuples, 5000u);
  }
  EXPECT_THROW(troupe_apps::fd::model::load(path), std::runtime_error);  // not a model
}

// ---------------------------------------------------------------- spike detection

#include "sd/sd.hpp"

TEST(apps_sd, spikes_equal_a_sequential_reference) {
  auto lines = troupe_apps::sd::generate(20'000, 52, 11);
  lines.insert(lines.begin() + 5, "2004-03-01 00:00:00.0 17 3 not-a-number 1 2 3");
  lines.insert(lines.begin() + 50, "too few fields");
  std::string text;
  for (auto& l : lines) text += l + '\n';
  const auto path = write_file("sd_input.txt", text);
  constexpr std::size_t window = 50;
  constexpr double threshold = 0.025;
  // Reference: per device, the mean of its last `window` temperatures.
  std::set<std::pair<int, std::uint64_t>> want;
  std::map<int, std::vector<double>> seen;
  for (auto& l : lines) {
    std::istringstream in{l};
    std::string date, time, epoch, device, temp, h, li, v;
    if (!(in >> date >> time >> epoch >> device >> temp >> h >> li >> v)) continue;
    double t = 0;
    try {
      std::size_t used = 0;
      t = std::stod(temp, &used);
      if (used != temp.size()) continue;
    } catch (const std::exception&) {
      continue;
    }
    auto& s = seen[std::stoi(device)];
    s.push_back(t);
    const std::size_t from = s.size() > window ? s.size() - window : 0;
    double sum = 0;
    for (std::size_t i = from; i < s.size(); ++i) sum += s[i];
    const double mean = sum / static_cast<double>(s.size() - from);
    if (std::abs(t - mean) > threshold * mean) want.emplace(std::stoi(device), std::stoull(epoch));
  }
  ASSERT_FALSE(want.empty());
  for (std::string par : {"1,1,1,1", "1,3,2,2"}) {
    SCOPED_TRACE(par);
    troupe::actor_system sys{troupe::config{}.workers(2)};
    std::vector<std::string> v{"prog", "--input", path, "--passes", "1", "--parallelism", par, "--window", "50"};
    auto a = args(v);
    auto c = troupe_apps::cli::parse(static_cast<int>(a.size()), a.data(), troupe_apps::sd::operators, "",
                                     {{"window", "1000"}, {"threshold", "0.025"}});
    auto r = troupe_apps::sd::run(sys, c);
    EXPECT_EQ(r.spikes, want);
    EXPECT_EQ(r.result.malformed, 2u);
    EXPECT_EQ(r.result.sink_tuples, want.size());
  }
}
