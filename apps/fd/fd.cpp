#include "fd.hpp"

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <unordered_map>

namespace troupe_apps::fd {

int model::index(const std::string& label) const {
  for (std::size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == label) return static_cast<int>(i);
  return -1;
}

model model::load(const std::string& path) {
  auto lines = read_lines(path, default_max_line, "model file");
  auto bad = [&](std::size_t line, const std::string& what) {
    return std::runtime_error("model file '" + path + "', line " + std::to_string(line) + ": " + what);
  };
  model m;
  std::stringstream head{lines[0]};
  for (std::string l; std::getline(head, l, ',');) m.labels.push_back(l);
  if (m.labels.size() != states) throw bad(1, "expected " + std::to_string(states) + " state labels");
  if (lines.size() < states + 1)
    throw bad(lines.size(), "expected " + std::to_string(states) + " rows of probabilities");
  for (std::size_t r = 0; r < states; ++r) {
    std::stringstream row{lines[r + 1]};
    std::size_t c = 0;
    for (std::string v; std::getline(row, v, ','); ++c) {
      if (c == states) throw bad(r + 2, "more than " + std::to_string(states) + " values");
      try {
        m.p[r][c] = std::stod(v);
      } catch (const std::exception&) {
        throw bad(r + 2, "not a number: '" + v + "'");
      }
    }
    if (c != states) throw bad(r + 2, "expected " + std::to_string(states) + " values");
  }
  return m;
}

bool parse(const std::string& line, const model& m, transaction& out) {
  const auto a = line.find(',');
  if (a != 3) return false;
  const auto b = line.find(',', a + 1);
  if (b != a + 13) return false;
  const int s = m.index(line.substr(b + 1));
  if (s < 0) return false;
  std::memcpy(out.customer, line.data(), 3);
  out.customer[3] = 0;
  std::memcpy(out.id, line.data() + a + 1, 12);
  out.id[12] = 0;
  out.state = static_cast<std::uint8_t>(s);
  return true;
}

std::vector<std::string> generate(std::size_t lines, std::size_t customers, const model& m, std::uint64_t seed) {
  static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::mt19937_64 rng{seed};
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  std::vector<std::string> ids(customers);
  for (auto& id : ids)
    for (int k = 0; k < 3; ++k) id += alphabet[pick(36)];
  std::vector<std::string> out;
  out.reserve(lines);
  for (std::size_t i = 0; i < lines; ++i) {
    std::string l = ids[pick(customers)] + ',';
    for (int k = 0; k < 12; ++k) l += alphabet[pick(36)];
    l += ',';
    l += m.labels[pick(states)];
    out.push_back(std::move(l));
  }
  return out;
}

namespace {

namespace st = troupe::stream;

struct predictor : st::node<transaction, transaction> {
  static constexpr const char* kind = "predictor";
  const model* m = nullptr;
  struct recent {
    std::array<std::uint8_t, window> s{};
    std::size_t n = 0;  // states seen (the last `window` are kept, oldest first)
    void save(st::state_writer& out) const {
      out.write(s);
      out.write(n);
    }
    void load(st::state_reader& in) {
      in.read(s);
      in.read(n);
    }
  };
  std::unordered_map<std::string, recent> customers;
  void consume(transaction& t) {
    auto& r = customers[std::string{t.customer, 3}];
    if (r.n < window) {
      r.s[r.n++] = t.state;
    } else {
      for (std::size_t i = 1; i < window; ++i) r.s[i - 1] = r.s[i];
      r.s[window - 1] = t.state;
    }
    if (r.n < window) return;
    double miss = 0;
    for (std::size_t i = 1; i < window; ++i) miss += 1.0 - m->p[r.s[i - 1]][r.s[i]];
    t.score = miss / (window - 1);
    if (t.score > threshold) send_next(std::move(t));
  }
  void snapshot(st::state_writer& out) const { out.write(customers); }
  void restore(st::state_reader& in) { in.read(customers); }
};

struct outliers {
  std::mutex mtx;
  std::set<std::string> ids;
};

struct sink : app_sink<transaction> {
  std::shared_ptr<outliers> found;  // null: the ids are not kept (benchmarks)
  void consume(const transaction& t) {
    arrived();
    if (found) {
      std::lock_guard<std::mutex> guard{found->mtx};
      found->ids.insert(t.id);
    }
    if (writes()) line(std::string{t.customer} + ',' + t.id + ',' + std::to_string(t.score));
  }
};

}  // namespace

outcome run(troupe::actor_system& sys, const cli& c, bool keep) {
  const auto m = model::load(c.extra.at("model"));
  name_for_network<transaction>("fd.transaction");
  output_file out{output_file_path(c)};
  auto found = std::make_shared<outliers>();
  predictor pred;
  pred.m = &m;
  sink snk;
  snk.bind(out, c);
  if (keep) snk.found = found;
  const auto graph = [&](auto source) {
    return run_graph(sys, "fd",
                     troupe::pipeline{troupe::farm{std::move(source), c.replicas(0)},
                                      troupe::farm{pred, c.replicas(1), troupe::by_key{[](const transaction& t) {
                                                     return std::string_view{t.customer, 3};
                                                   }}},
                                      troupe::farm{snk, c.replicas(2)}},
                     c, operators.size(), 0);
  };
  std::uint64_t malformed = 0;  // lines of the input file skipped at load time
  const auto file = [&] {
    auto lines = c.input.empty() ? generate(800'000, 10'000, m) : read_lines(c.input, c.max_line);
    auto data =
        load<transaction>(lines, [&m](const std::string& l, transaction& t) { return parse(l, m, t); }, malformed);
    return replay_source<transaction>{data, c};
  };
  const auto text = [&m](std::string_view data, transaction& t) { return parse(std::string{data}, m, t); };
  outcome r{with_source<transaction>(c, "fd", text, file, graph), {}};
  r.result.malformed += malformed;
  r.outliers = std::move(found->ids);
  return r;
}

}  // namespace troupe_apps::fd
