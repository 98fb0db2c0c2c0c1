// The streaming applications on small fixed inputs, run to completion
// (--passes), against independent sequential references; and their flags.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include "lr/lr.hpp"
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
  EXPECT_EQ(parse({"--metrics-port", "9464"}).metrics_port, 9464);
  EXPECT_EQ(parse({}).metrics_port, -1);
  EXPECT_NE(message({"--metrics-port", "http"}).find("--metrics-port"), std::string::npos);
  EXPECT_NE(message({"--metrics-port", "65536"}).find("--metrics-port"), std::string::npos);
  EXPECT_THROW(troupe_apps::read_lines("/nonexistent/input.txt"), std::runtime_error);
}

TEST(apps_wc, counts_equal_a_sequential_reference) {
  const std::string text =
      "the cat  sat on the mat\nthe end\n\n a b a b a\nunicode: \xc3\xa9t\xc3\xa9 \xc3\xa9t\xc3\xa9\n";
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
    troupe::actor_system sys{troupe::config{.workers = 2}};
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
  lines.insert(lines.begin() + 20, "ABC,123,LNL");           // short transaction id
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
    troupe::actor_system sys{troupe::config{.workers = 2}};
    std::vector<std::string> v{"prog", "--input", path, "--passes", "1", "--parallelism", par};
    auto a = args(v);
    auto c = troupe_apps::cli::parse(static_cast<int>(a.size()), a.data(), troupe_apps::fd::operators, "",
                                     {{"model", TROUPE_APPS_DATA "/fd_model.txt"}});
    auto r = troupe_apps::fd::run(sys, c, true);
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
    troupe::actor_system sys{troupe::config{.workers = 2}};
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

namespace {

// An independent sequential Linear Road (tolls): the input read in time
// order, every quantity computed from plain maps at the end.
struct lr_reference {
  using key = std::pair<std::int32_t, std::int32_t>;  // (segment, minute)
  std::map<key, std::int32_t> lavs, cars;
  std::set<key> accidents;
  std::vector<troupe_apps::lr::toll> tolls;

  explicit lr_reference(const std::vector<std::string>& lines, int passes) {
    struct rep {
      int t, vid, speed, xway, lane, dir, seg, pos;
    };
    std::vector<rep> reps;
    int last_time = 0;
    for (auto& l : lines) {
      std::vector<long> f;
      std::stringstream in{l};
      std::string item;
      bool ok = true;
      while (std::getline(in, item, ',')) {
        try {
          std::size_t used = 0;
          f.push_back(std::stol(item, &used));
          ok = ok && used == item.size();
        } catch (const std::exception&) {
          ok = false;
        }
      }
      if (!ok || f.size() != 15) continue;
      if (f[0] == 0 && f[7] == f[8] / 5280 && f[6] >= 0 && f[6] <= 1)
        reps.push_back(rep{int(f[1]), int(f[2]), int(f[3]), int(f[4]), int(f[5]), int(f[6]), int(f[7]), int(f[8])});
      if (f[0] == 0 || f[0] == 2 || f[0] == 3) last_time = std::max(last_time, int(f[1]));
    }
    const int span = (last_time / 60 + 1) * 60;
    const auto one_pass = reps;
    for (int p = 1; p < passes; ++p)
      for (auto r : one_pass) {
        r.t += p * span;
        reps.push_back(r);
      }
    std::map<key, std::set<int>> vehicles;                              // distinct cars
    std::map<std::tuple<int, int, int>, std::pair<long, long>> speeds;  // (vid, segment, minute) -> sum, n
    std::map<std::tuple<int, int, int, int>, std::set<int>> stopped;    // (segment, minute, lane, pos)
    struct last_seen {
      int t, lane, pos, segment, streak;
    };
    std::map<int, last_seen> previous;
    std::map<int, int> previous_segment;
    std::vector<std::tuple<int, int, int>> crossings;  // (vid, segment, minute)
    int first_minute = INT32_MAX, last_minute = 0;
    for (auto& r : reps) {
      const int m = r.t / 60 + 1, s = (r.xway * 2 + r.dir) * 100 + r.seg;
      first_minute = std::min(first_minute, m);
      last_minute = std::max(last_minute, m);
      vehicles[{s, m}].insert(r.vid);
      auto& sp = speeds[{r.vid, s, m}];
      sp.first += r.speed;
      ++sp.second;
      auto it = previous.find(r.vid);
      int streak = 1;
      if (it != previous.end() && it->second.t + 30 == r.t && it->second.lane == r.lane && it->second.pos == r.pos &&
          it->second.segment == s)
        streak = it->second.streak + 1;
      previous[r.vid] = last_seen{r.t, r.lane, r.pos, s, streak};
      if (streak >= 4) stopped[{s, m, r.lane, r.pos}].insert(r.vid);
      auto ps = previous_segment.find(r.vid);
      const bool entered = ps == previous_segment.end() || ps->second != s;
      previous_segment[r.vid] = s;
      if (entered && r.lane != 4) crossings.emplace_back(r.vid, s, m);
    }
    for (auto& [k, v] : vehicles) cars[k] = static_cast<std::int32_t>(v.size());
    for (auto& [k, who] : stopped)
      if (who.size() >= 2) accidents.emplace(std::get<0>(k), std::get<1>(k));
    std::map<key, std::pair<long, long>> segment_means;  // sum of vehicle means (milli-mph), n
    for (auto& [k, sp] : speeds) {
      auto& a = segment_means[{std::get<1>(k), std::get<2>(k)}];
      a.first += sp.first * 1000 / sp.second;
      ++a.second;
    }
    std::map<int, std::map<int, long>> by_segment;  // segment -> minute -> mean
    for (auto& [k, a] : segment_means) by_segment[k.first][k.second] = a.first / a.second;
    for (auto& [s, means] : by_segment)
      for (int m = first_minute; m <= last_minute; ++m) {
        long sum = 0, n = 0;
        for (int x = m - 4; x <= m; ++x)
          if (auto it = means.find(x); it != means.end()) sum += it->second, ++n;
        if (n > 0) lavs[{s, m + 1}] = static_cast<std::int32_t>(sum / n / 1000);
      }
    for (auto& [vid, s, m] : crossings) {
      troupe_apps::lr::toll t;
      t.vid = vid;
      t.segment = s;
      t.minute = m;
      if (auto it = lavs.find({s, m}); it != lavs.end()) t.lav = it->second;
      if (auto it = cars.find({s, m - 1}); it != cars.end()) t.cars = it->second;
      bool accident = false;
      const int seg = s % 100, step = (s / 100) % 2 == 0 ? 1 : -1;
      for (int i = 0; i <= 4; ++i) {
        const int x = seg + step * i;
        if (x >= 0 && x < 100 && accidents.count({s - seg + x, m - 1})) accident = true;
      }
      if (t.lav >= 0 && t.lav < 40 && t.cars > 50 && !accident) t.amount = 2 * (t.cars - 50) * (t.cars - 50);
      tolls.push_back(t);
    }
    std::sort(tolls.begin(), tolls.end());
  }
};

}  // namespace

TEST(apps_lr, tolls_and_statistics_equal_a_sequential_reference) {
  auto lines = troupe_apps::lr::generate(25, 1, 2);  // seed 2: accidents spare some tolls
  lines.insert(lines.begin() + 10, "0,1,2,3");       // too few fields
  lines.insert(lines.begin() + 20, "0,5,100,55,0,1,0,7,9999999,-1,-1,-1,-1,-1,-1");  // position off the road
  lines.insert(lines.begin() + 30, "x,5,100,55,0,1,0,7,36960,-1,-1,-1,-1,-1,-1");    // not a number
  std::string text;
  for (auto& l : lines) text += l + '\n';
  const auto path = write_file("lr_input.txt", text);
  std::map<int, lr_reference> want;
  for (int passes : {1, 2}) want.emplace(passes, lr_reference{lines, passes});
  const auto& one = want.at(1);
  ASSERT_FALSE(one.accidents.empty());
  ASSERT_GT(std::count_if(one.tolls.begin(), one.tolls.end(), [](auto& t) { return t.amount > 0; }), 0);
  // Some congested crossings pay nothing because of an accident ahead.
  ASSERT_GT(std::count_if(one.tolls.begin(), one.tolls.end(),
                          [](auto& t) { return t.lav >= 0 && t.lav < 40 && t.cars > 50 && t.amount == 0; }),
            0);
  for (auto [par, passes] : {std::pair{"1,1,1,1,1,1,1,1,1", 1}, std::pair{"1,2,3,2,2,2,3,2,1", 1},
                             std::pair{"2,1,1,1,1,1,1,1,1", 1}, std::pair{"1,2,2,2,2,2,2,2,1", 2}}) {
    SCOPED_TRACE(std::string{par} + " passes " + std::to_string(passes));
    troupe::actor_system sys{troupe::config{.workers = 2}};
    std::vector<std::string> v{"prog", "--input", path, "--passes", std::to_string(passes), "--parallelism", par};
    auto a = args(v);
    auto c = troupe_apps::cli::parse(static_cast<int>(a.size()), a.data(), troupe_apps::lr::operators, "",
                                     {{"minutes", "180"}, {"xways", "1"}});
    auto r = troupe_apps::lr::run(sys, c, true);
    EXPECT_EQ(r.result.malformed, 3u);
    if (par[0] == '2') {
      // Two sources replay the input twice over, interleaved: the per-minute
      // protocol must still end; every crossing of both replays is assessed.
      EXPECT_GE(r.assessed, one.tolls.size());
      continue;
    }
    const auto& ref = want.at(passes);
    EXPECT_EQ(r.cars, ref.cars);
    EXPECT_EQ(r.accidents, ref.accidents);
    EXPECT_EQ(r.lavs, ref.lavs);
    ASSERT_EQ(r.tolls.size(), ref.tolls.size());
    EXPECT_TRUE(r.tolls == ref.tolls);
    EXPECT_EQ(r.assessed, ref.tolls.size());
  }
}

TEST(apps_lr, bad_input_and_flags_are_reported) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  auto run = [&](std::vector<std::string> v) {
    v.insert(v.begin(), "prog");
    auto a = args(v);
    auto c = troupe_apps::cli::parse(static_cast<int>(a.size()), a.data(), troupe_apps::lr::operators, "",
                                     {{"minutes", "180"}, {"xways", "1"}});
    return troupe_apps::lr::run(sys, c);
  };
  const auto junk = write_file("lr_junk.txt", "hello\n1,2,3\n");
  EXPECT_THROW(run({"--input", junk, "--passes", "1"}), std::runtime_error);
  EXPECT_THROW(run({"--input", ::testing::TempDir() + "no_such_lr_file", "--passes", "1"}), std::runtime_error);
  EXPECT_THROW(run({"--passes", "1", "--minutes", "2.5"}), troupe_apps::usage_error);
  EXPECT_THROW(run({"--passes", "1", "--parallelism", "1,1,1,1,1,1,1,1,2"}), troupe_apps::usage_error);
}
