// checkpoint_overhead: troupe-wc, -fd, -sd and -lr at full speed over
// whole passes of their input (the applications themselves, one replica per
// operator, 2 workers), without checkpoints and with a checkpoint every
// second (state in memory, one file per checkpoint in a fresh directory under
// $TMPDIR, removed at the end of each run). The sink writes nothing in both
// (no --output: the exactly-once file sink is not what is measured here).
//
// params:
//   app     0 wc, 1 fd, 2 sd, 3 lr (180 minutes of generated traffic on one
//           expressway, as bench_apps runs it)
//   passes  replays of the input (sized so that a run lasts several seconds
//           on the 2-core machine: several checkpoints)
// impls:
//   no_checkpoints   troupe_apps::<app>::run as troupe-<app> --passes N
//   checkpoints_1s   the same with --checkpoint-dir DIR --checkpoint-interval 1000
//   checkpoints_1s_rocksdb  the same with --state-backend rocksdb (wc only:
//                    its counters' keyed state; fd and sd keep none, so it
//                    would be checkpoints_1s again)
// Measured region: the app's own timed run (run_result::elapsed_s: from the
// spawn of the graph until every sink has drained; loading the input is
// outside it).
// Figure: source tuples/s.
// Extras: elapsed_s; checkpoints (completed during the run).
// Check: the source emitted passes x the input's tuples; checkpoints_1s
// completed at least one checkpoint (else the run was too short to measure
// anything).

#include <stdexcept>
#include <string>
#include <vector>

#include "common/app_sample.hpp"
#include "common/harness.hpp"
#include "common/temp_dir.hpp"
#include "fd/fd.hpp"
#include "lr/lr.hpp"
#include "sd/sd.hpp"
#include "wc/wc.hpp"

namespace {

using troupe_apps::cli;

const char* const app_names[] = {"wc", "fd", "sd", "lr"};

cli flags(const bench::params& p) {
  cli c;
  const auto app = p.get("app");
  c.passes = static_cast<std::uint64_t>(p.get("passes"));
  c.input = app == 0 ? TROUPE_APPS_DATA "/book.dat" : "";
  c.extra["model"] = TROUPE_APPS_DATA "/fd_model.txt";
  c.extra["window"] = "1000";
  c.extra["threshold"] = "0.025";
  c.extra["minutes"] = "180";
  c.extra["xways"] = "1";
  const auto& ops = app == 0   ? troupe_apps::wc::operators
                    : app == 1 ? troupe_apps::fd::operators
                    : app == 2 ? troupe_apps::sd::operators
                               : troupe_apps::lr::operators;
  c.parallelism.assign(ops.size(), 1);
  return c;
}

troupe_apps::run_result run_app(const bench::params& p, const cli& c) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  switch (p.get("app")) {
    case 0:
      return troupe_apps::wc::run(sys, c).result;
    case 1:
      return troupe_apps::fd::run(sys, c, false).result;
    case 2:
      return troupe_apps::sd::run(sys, c).result;
    default:
      return troupe_apps::lr::run(sys, c).result;
  }
}

bench::sample sample_of(const troupe_apps::run_result& r) {
  auto s = bench::app_sample(r);
  s.add("checkpoints", static_cast<double>(r.checkpoints), "");
  return s;
}

bench::sample run_plain(const bench::params& p) { return sample_of(run_app(p, flags(p))); }

bench::sample run_checkpointed_in(const bench::params& p, const std::string& backend) {
  const bench::temp_dir where{"troupe_checkpoint_overhead_"};
  cli c = flags(p);
  c.state_backend = backend;
  c.checkpoint_dir = where.path();
  c.checkpoint_interval_ms = 1000;
  const auto r = run_app(p, c);
  if (r.checkpoints == 0)
    throw std::runtime_error(std::string{app_names[p.get("app")]} +
                             ": no checkpoint completed: the run was too short to measure their cost");
  return sample_of(r);
}

bench::sample run_checkpointed(const bench::params& p) { return run_checkpointed_in(p, "heap"); }

bench::sample run_checkpointed_rocksdb(const bench::params& p) {
#if TROUPE_APPS_ROCKSDB
  if (p.get("app") != 0) throw bench::not_available("only wc keeps keyed state");
  return run_checkpointed_in(p, "rocksdb");
#else
  (void)p;
  throw bench::not_available("troupe::rocksdb is not built (librocksdb-dev)");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "checkpoint_overhead";
  s.description =
      "wc, fd, sd and lr at full speed over whole passes: without checkpoints vs a checkpoint every second, "
      "source tuples/s";
  s.impls = {{"no_checkpoints", run_plain},
             {"checkpoints_1s", run_checkpointed},
             {"checkpoints_1s_rocksdb", run_checkpointed_rocksdb}};
  s.primary = bench::extra_metric("tuples_per_s", "tuples/s", true, "source_tuples_per_s");
  s.variants = [](bool full) {
    const std::int64_t k = full ? 2 : 1;
    return std::vector<bench::variant>{{"wc", {{"app", 0}, {"passes", k * 400}}},
                                       {"fd", {{"app", 1}, {"passes", k * 60}}},
                                       {"sd", {{"app", 2}, {"passes", k * 150}}},
                                       {"lr", {{"app", 3}, {"passes", k * 12}}}};
  };
  s.default_runs = 3;
  s.timeout_s = 180;
  return bench::run_main(argc, argv, s);
}
