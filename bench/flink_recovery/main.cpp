// flink_recovery: the word count of bench_flink_wc killed while it runs,
// on troupe and on Apache Flink, in the same run: from the kill (SIGKILL) to
// the restarted job's first output, restored from its last checkpoint (one
// every second, heap or RocksDB state).
//   troupe: troupe-wc (troupe_apps::wc::run) in a forked process,
//           parallelism 1,2,2,1 on 2 workers, replaying book.dat from memory
//           without end; killed once its directory holds a completed
//           checkpoint, then run again at once in a second forked process
//           with the same flags, as a launcher restarts a job (the launcher's
//           own delay, systemd's RestartSec say, is not in the figure); the
//           second process's first element at a sink ends the span.
//   flink:  bench/flink/recovery.py: a standalone cluster on loopback (one
//           JobManager, two TaskManagers of two slots, one of them spare),
//           heartbeats of 1 s with a 5 s timeout, a fixed-delay restart of
//           1 s (shared/anchors/flink.md's tuned set-up);
//           bench/flink/WcJob.java at parallelism 2 reading `copies` copies
//           of book.dat from a file; once a checkpoint is complete, the
//           TaskManager running the job is killed, and the first counter of
//           the restarted attempt to get an element ends the span. Flink
//           finds the loss itself and restarts on the spare slots: its
//           figure includes the detection.
// Set up by `scripts/bench --flink flink_recovery`; Flink's rows are skipped
// where it is not set up.
//
// params:
//   copies  book.dat's repetitions in Flink's input (enough for the job to
//           outlive the kill and the restart)
// impls:
//   troupe_heap, troupe_rocksdb, flink_heap, flink_rocksdb
// Measured region: from the kill to the restarted job's first output
// (troupe: steady_clock, one clock for all processes; Flink: the wall clock,
// read by the script and by the TaskManagers).
// Figure: recovery_ms (lower is better). Extras: flink: all_ms (to the last
// counter's first element).
// Check: the restarted job resumed from a checkpoint (troupe: the directory
// names one to resume; Flink: its REST API reports a restored checkpoint).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/harness.hpp"
#include "common/restart.hpp"
#include "common/temp_dir.hpp"
#include "flink/flink.hpp"
#include "troupe/troupe.hpp"
#include "wc/wc.hpp"

namespace {

namespace flink = bench::flink;

troupe_apps::cli wc_flags(const std::string& dir, const char* backend) {
  troupe_apps::cli c;
  c.input = flink::book;
  c.passes = 1'000'000;  // runs until it is killed
  c.parallelism = {1, 2, 2, 1};
  c.checkpoint_dir = dir;
  c.checkpoint_interval_ms = 1000;
  c.state_backend = backend;
  return c;
}

bench::sample run_troupe(const char* backend) {
  const bench::temp_dir where{"troupe_flink_recovery_"};
  const std::string dir = where.path() + "/ckpt";
  const auto deadline = bench::restart_clock::now() + std::chrono::seconds{100};

  // 1. The first run, killed once a checkpoint is complete.
  bench::process first;
  bench::fork_child(first, [&] {
    troupe::actor_system sys{troupe::config{.workers = 2}};
    (void)troupe_apps::wc::run(sys, wc_flags(dir, backend));
  });
  const auto killed = bench::kill_after_checkpoint(first, dir, deadline);
  const auto restored = troupe::stream::checkpoint_to_resume(dir, 0, 1).restored;
  if (restored == 0) throw std::runtime_error("no checkpoint to resume from after the kill");

  // 2. The same job again, at once; the sinks' first element ends the span.
  bench::process second;
  const auto line = bench::fork_and_read(
      second,
      [&](int fd) {
        std::atomic<std::int64_t> seen{0};
        auto c = wc_flags(dir, backend);
        c.on_first_output = [&seen] {
          std::int64_t none = 0;
          seen.compare_exchange_strong(none, bench::now_ns(), std::memory_order_release);
        };
        std::thread job{[&] {
          try {
            troupe::actor_system sys{troupe::config{.workers = 2}};
            (void)troupe_apps::wc::run(sys, c);
          } catch (const std::exception& e) {
            bench::child_fails(fd, e.what());
          }
        }};
        job.detach();  // the child ends at the report, the job with it
        while (seen.load(std::memory_order_acquire) == 0) std::this_thread::sleep_for(std::chrono::microseconds{50});
        return std::to_string(seen.load());
      },
      deadline);
  long long first_at = 0;
  if (std::sscanf(line.c_str(), "%lld", &first_at) != 1)
    throw std::runtime_error("the restarted run reported '" + line + "'");
  bench::sample s;
  s.wall_s = static_cast<double>(first_at - killed) / 1e9;
  s.add("recovery_ms", static_cast<double>(first_at - killed) / 1e6, "ms");
  return s;
}

bench::sample run_flink(const bench::params& p, const char* backend) {
  const auto f = flink::find();
  const bench::temp_dir where{"troupe_flink_recovery_"};
  const auto input = where.path() + "/input.txt";
  flink::write_copies(input, p.get("copies"));
  const auto work = where.path() + "/flink";
  const auto log = where.path() + "/recovery.log";
  std::filesystem::create_directories(work);
  const std::string cmd = "python3 '" TROUPE_SOURCE_DIR "/bench/flink/recovery.py' '" + f.dir + "' '" + input + "' '" +
                          work + "' " + backend;
  const auto line = flink::run_for(cmd, log, "recovery_ms ", "Flink's recovery run");
  double recovery_ms = 0, all_ms = 0;
  unsigned long long restored = 0;
  if (std::sscanf(line.c_str(), "recovery_ms %lf all_ms %lf restored %llu", &recovery_ms, &all_ms, &restored) != 3)
    throw std::runtime_error("Flink's recovery run printed '" + line + "'");
  if (restored == 0) throw std::runtime_error("Flink restored no checkpoint");
  bench::sample s;
  s.wall_s = recovery_ms / 1000.0;
  s.add("recovery_ms", recovery_ms, "ms");
  s.add("all_ms", all_ms, "ms");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "flink_recovery";
  s.description =
      "word count killed with SIGKILL on troupe and on Apache Flink, checkpoints every second: from the kill to the "
      "restarted job's first output, ms";
  s.impls = {{"troupe_heap", [](const bench::params&) { return run_troupe("heap"); }},
             {"troupe_rocksdb",
              [](const bench::params&) {
#if TROUPE_APPS_ROCKSDB
                return run_troupe("rocksdb");
#else
                throw bench::not_available("troupe::rocksdb is not built (librocksdb-dev)");
                return bench::sample{};
#endif
              }},
             {"flink_heap", [](const bench::params& p) { return run_flink(p, "heap"); }},
             {"flink_rocksdb", [](const bench::params& p) { return run_flink(p, "rocksdb"); }}};
  s.primary = bench::extra_metric("recovery_ms", "ms", false, "recovery_ms");
  s.variants = [](bool) { return std::vector<bench::variant>{{"116 copies", {{"copies", 116}}}}; };
  s.default_runs = 3;
  s.timeout_s = 300;
  return bench::run_main(argc, argv, s);
}
