// nats_fd: fraud detection end to end through NATS JetStream, exactly once,
// against the same run from a file to a file.
//
// The input: troupe-fd's own generated transactions (`n` of them). troupe-fd
// (troupe_apps::fd::run, in this process) at parallelism 1,2,1 on 2 workers,
// with a checkpoint every second:
//   files  --input a file (loaded into memory first, outside the measured
//          region) --output a file, exactly once (file_sink);
//   nats   --input nats://.../IN (a durable consumer of the stream, filled
//          before the run) --output nats://.../out (the NATS sink, exactly
//          once: published when each checkpoint completes).
// Each run starts its own nats-server (JetStream, file storage, a fresh
// directory under $TMPDIR, a free loopback port); `files` too, so that both
// share the machine with a server.
// Measured region: the app's timed run (from the spawn to the graph's end,
// the last checkpoint's commit included).
// Figure: transactions/s (higher is better).
// Check: nats: the output stream holds as many alerts as the file run
// writes lines (the same transactions, the same model).

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/harness.hpp"
#include "common/temp_dir.hpp"
#include "fd/fd.hpp"
#include "nats_server.hpp"

namespace {

/// The lines of a file.
std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in{path};
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

/// A run's server, its input file and its streams.
struct setting {
  bench::temp_dir where{"troupe_bench_nats_fd_"};
  nats_support::server server{where.path()};
  nats_support::client client{server.url()};
  std::string input = where.path() + "/in.txt";
  explicit setting(std::int64_t n) {
    const auto m = troupe_apps::fd::model::load(TROUPE_APPS_DATA "/fd_model.txt");
    const auto lines = troupe_apps::fd::generate(static_cast<std::size_t>(n), 10'000, m);
    std::ofstream f{input};
    for (const auto& l : lines) f << l << '\n';
    client.make_stream("IN", "in");
    client.make_stream("OUT", "out");
  }
};

troupe_apps::cli flags(const setting& s, const std::string& in, const std::string& out) {
  troupe_apps::cli c;
  c.input = in;
  c.output = out;
  c.passes = 1;
  c.parallelism = {1, 2, 1};
  c.checkpoint_dir = s.where.path() + "/ckpt";
  c.checkpoint_interval_ms = 1000;
  c.extra["model"] = TROUPE_APPS_DATA "/fd_model.txt";
  return c;
}

bench::sample rate(const troupe_apps::run_result& r, std::int64_t n) {
  bench::check(r.source_tuples == static_cast<std::uint64_t>(n),
               "the source read " + std::to_string(r.source_tuples) + " of " + std::to_string(n) + " transactions");
  bench::sample s;
  s.wall_s = r.elapsed_s;
  s.add("transactions_per_s", static_cast<double>(n) / r.elapsed_s, "transactions/s", true);
  s.add("alerts", static_cast<double>(r.sink_tuples), "alerts");
  return s;
}

bench::sample run_files(const bench::params& p) {
  const auto n = p.get("n");
  setting s{n};
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto out = s.where.path() + "/out.txt";
  const auto r = troupe_apps::fd::run(sys, flags(s, s.input, out), false).result;
  bench::check(lines_of(out).size() == r.sink_tuples, "the output file holds every alert once");
  return rate(r, n);
}

bench::sample run_nats(const bench::params& p) {
  const auto n = p.get("n");
  setting s{n};
  const auto lines = lines_of(s.input);
  for (std::size_t i = 0; i < lines.size(); i += 65536)
    s.client.publish(
        "in", std::vector<std::string>(lines.begin() + static_cast<std::ptrdiff_t>(i),
                                       lines.begin() + static_cast<std::ptrdiff_t>(std::min(lines.size(), i + 65536))));
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto r = troupe_apps::fd::run(sys, flags(s, s.server.url() + "/IN", s.server.url() + "/out"), false).result;
  bench::check(s.client.count("OUT") == r.sink_tuples, "the output stream holds every alert once");
  return rate(r, n);
}

}  // namespace

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "nats_fd";
  s.description =
      "fraud detection from NATS to NATS exactly once (checkpoints every second) against files to files, "
      "transactions/s";
  s.impls = {{"files", run_files}, {"nats", run_nats}};
  s.primary = bench::extra_metric("transactions_per_s", "transactions/s", true, "transactions_per_s");
  s.variants = [](bool full) {
    return std::vector<bench::variant>{
        {full ? "800k transactions" : "200k transactions", {{"n", full ? 800'000 : 200'000}}}};
  };
  s.default_runs = 5;
  s.timeout_s = 300;
  return bench::run_main(argc, argv, s);
}
