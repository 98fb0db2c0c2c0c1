// apps_split: troupe-wc and troupe-fd at full speed in one process, and split
// over two processes on this machine (troupe::net::split through the apps'
// own --peers/--placement flags), one operator replica each:
//   wc  source, splitter on rank 0 | counter (by word), sink on rank 1  ("0;0;1;1")
//   fd  source on rank 0 | predictor (by customer), sink on rank 1        ("0;1;1")
// What it shows is the cost of the split: with 2 cores both processes share
// the same cores, so a split run cannot be faster than one process here; on
// machines with more cores per process it adds the second machine's cores.
//
// params:
//   app      0 wc, 1 fd
//   seconds  how long the source emits (quick 5, full 10)
// impls:
//   one_process    troupe_apps::<app>::run, 2 workers (as bench_apps_max_rate)
//   two_processes  the same run() in two processes: the client is rank 0,
//                  a forked server process (common/peer_process.hpp) rank 1,
//                  plaintext TCP on 127.0.0.1 (ports picked free first);
//                  each process's actor system has 1 worker, which runs
//                  its part of the graph, edges included (one engine)
// Measured region: the app's own timed run on rank 0 (run_result::elapsed_s:
// from the start until its part has drained and every element it sent is
// acknowledged by rank 1).
// Figure: source tuples/s (rank 0 runs the source in both impls; wc's sink
// gets words, not lines, so the sources' rate is the one both impls share).
// Extras: elapsed_s. Peak RSS from the harness (the larger of both processes).
// Check: the source emitted tuples; the server process exited cleanly (its
// graph drained without error). That split runs compute what one process
// computes is tested, not benchmarked (tests/apps_cli_test.cpp, apps_split).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "common/app_sample.hpp"
#include "common/harness.hpp"
#include "common/peer_process.hpp"
#include "fd/fd.hpp"
#include "wc/wc.hpp"

namespace {

using troupe_apps::cli;

using child_process::free_ports;

cli flags(const bench::params& p) {
  cli c;
  c.duration = static_cast<double>(p.get("seconds"));
  c.input = p.get("app") == 0 ? TROUPE_APPS_DATA "/book.dat" : "";
  c.extra["model"] = TROUPE_APPS_DATA "/fd_model.txt";
  c.parallelism.assign(p.get("app") == 0 ? troupe_apps::wc::operators.size() : troupe_apps::fd::operators.size(), 1);
  return c;
}

troupe_apps::run_result run_app(const bench::params& p, cli& c, std::size_t workers) {
  troupe::actor_system sys{troupe::config{.workers = workers}};
  if (p.get("app") == 0) return troupe_apps::wc::run(sys, c).result;
  return troupe_apps::fd::run(sys, c).result;
}

bench::sample run_one_process(const bench::params& p) {
  cli c = flags(p);
  return bench::app_sample(run_app(p, c, 2));
}

bench::sample run_two_processes(const bench::params& p) {
  const auto deadline = bench::peer::deadline_from_now(std::chrono::seconds{60 + p.get("seconds")});
  const auto ports = free_ports(2);
  cli c = flags(p);
  for (const auto& f : troupe_apps::split_flags()) c.extra[f.name] = f.value;  // the defaults, then ours
  c.extra["peers"] = "tcp://127.0.0.1:" + std::to_string(ports[0]) + ",tcp://127.0.0.1:" + std::to_string(ports[1]);
  c.extra["placement"] = p.get("app") == 0 ? "0;0;1;1" : "0;1;1";
  c.extra["security"] = "plaintext";
  bench::peer::server_process server{[&p, c](const bench::peer::reporter& report) mutable {
    report.ports({0});
    c.extra["rank"] = "1";
    run_app(p, c, 1);
  }};
  server.ports(deadline);
  c.extra["rank"] = "0";
  auto r = run_app(p, c, 1);
  server.join(deadline);
  return bench::app_sample(r);
}

}  // namespace

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "apps_split";
  s.description = "wc and fd at full speed: one process vs split over two processes on loopback, source tuples/s";
  s.impls = {{"one_process", run_one_process}, {"two_processes", run_two_processes}};
  s.primary = bench::extra_metric("tuples_per_s", "tuples/s", true, "source_tuples_per_s");
  s.variants = [](bool full) {
    const std::int64_t seconds = full ? 10 : 5;
    return std::vector<bench::variant>{{"wc", {{"app", 0}, {"seconds", seconds}}},
                                       {"fd", {{"app", 1}, {"seconds", seconds}}}};
  };
  s.default_runs = 3;
  s.timeout_s = 120;
  return bench::run_main(argc, argv, s);
}
