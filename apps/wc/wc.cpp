#include "wc.hpp"

#include <unordered_map>

namespace troupe_apps::wc {

namespace {

namespace st = troupe::stream;

struct splitter : st::node<line, word> {
  static constexpr const char* kind = "splitter";
  void consume(line& l) {
    const std::string& s = l.text;
    std::size_t from = 0;
    while (from <= s.size()) {
      std::size_t to = s.find(' ', from);
      if (to == std::string::npos) to = s.size();
      if (to > from) send_next(word{s.substr(from, to - from), l.stamp});
      from = to + 1;
    }
  }
};

// Final counts of every replica, merged when each replica stops.
struct totals {
  std::mutex mtx;
  std::map<std::string, std::uint64_t> counts;
};

struct counter : st::node<word, count> {
  static constexpr const char* kind = "counter";
  std::shared_ptr<totals> all;
  // Keyed state: saved with every checkpoint, on the heap or in RocksDB
  // (--state-backend).
  st::keyed_state<std::string, std::uint64_t>* counts = nullptr;
  void on_start() { counts = &keyed<std::string, std::uint64_t>("counts"); }
  void consume(word& w) {
    const auto n = counts->update(w.text, [](std::uint64_t& c) { return ++c; });
    send_next(count{std::move(w.text), n, w.stamp});
  }
  void on_stop() {
    std::lock_guard<std::mutex> guard{all->mtx};
    counts->for_each([&](const std::string& k, std::uint64_t v) { all->counts[k] += v; });
  }
};

struct sink : app_sink<count> {
  void consume(const count& c) {
    arrived();
    if (writes()) line(c.word + ' ' + std::to_string(c.n));
  }
};

}  // namespace

outcome run(troupe::actor_system& sys, const cli& c) {
  name_for_network<line>("wc.line");
  name_for_network<word>("wc.word");
  name_for_network<count>("wc.count");
  const bool checkpoints = !c.checkpoint_dir.empty();
  output_file out{output_file_path(c)};
  auto all = std::make_shared<totals>();
  counter count_proto;
  count_proto.all = all;
  sink sink_proto;
  sink_proto.bind(out, c);
  const auto graph = [&](auto source) {
    return run_graph(
        sys, "wc",
        troupe::pipeline{troupe::farm{std::move(source), c.replicas(0)}, troupe::farm{splitter{}, c.replicas(1)},
                         troupe::farm{count_proto, c.replicas(2), troupe::by_key{[](const word& w) { return w.text; }}},
                         troupe::farm{sink_proto, c.replicas(3)}},
        c, operators.size(), 0);
  };
  const auto file = [&] {
    std::uint64_t malformed = 0;  // every line is valid text
    auto data = load<line>(
        read_lines(c.input, c.max_line),
        [](const std::string& l, line& out) {
          out.text = l;
          return true;
        },
        malformed);
    return replay_source<line>{data, c};
  };
  const auto text = [](std::string_view data, line& l) {
    l.text = data;
    return true;
  };
  outcome r{with_source<line>(c, "wc", text, file, graph), {}};
  r.final_counts = std::move(all->counts);
  if (out.enabled()) {
    out.line("# final counts");
    for (auto& [w, n] : r.final_counts) out.line(w + ' ' + std::to_string(n));
  } else if (checkpoints && !c.output.empty() && !is_log(c.output) && !r.result.interrupted) {
    // After the graph's end (its checkpoints are gone: a crash from here on
    // reruns the whole job, and the sink starts the file afresh).
    std::ofstream f{c.output, std::ios::app};
    f << "# final counts\n";
    for (auto& [w, n] : r.final_counts) f << w << ' ' << n << '\n';
    if (!f) throw std::runtime_error("cannot write the --output file '" + c.output + "'");
  }
  return r;
}

}  // namespace troupe_apps::wc
