// recovery_time: how long a job killed with SIGKILL takes to give output
// again once it is started anew from its last checkpoint, with 10 MB and
// 100 MB of operator state.
//
// The job: a replayable generator (a counter, at full speed) -> a node that
// counts its elements by key -> a sink. Checkpoints every second into a
// fresh directory under $TMPDIR.
//   heap: the counts are a dense table of `mb` MB, the node's own state,
//         written whole into the checkpoint file at every checkpoint;
//   rocksdb: the counts are keyed state in RocksDB (troupe::rocksdb), one
//         key per counter, `mb` MB of keys and values (8 + 8 bytes each),
//         all written before the first checkpoint; a checkpoint links
//         RocksDB's table files, a restore links them back.
// One run:
//   1. a first process (forked) runs the job until its directory holds a
//      completed checkpoint; then it is killed (SIGKILL) at once;
//   2. from the kill, a second process (forked) runs the same job with the
//      same directory: it finds the checkpoint, restores the table (reads
//      and checks the file, copies the state in), seeks the generator and
//      starts; its sink's first element ends the measured span.
// The span includes starting the process's actor system and graph (fork
// copies the parent; no exec: a real restart adds loading the binary).
//
// params:
//   mb   the state's size in MB (heap: the checkpoint file is that much and a
//        few bytes; rocksdb: the raw keys and values, compressed on disk)
// impls:
//   heap     the in-memory state backend
//   rocksdb  the RocksDB state backend (skipped where troupe::rocksdb is not built)
// Measured region: from the kill of the first process to the first element
// at the second's sink (steady_clock, one clock for both processes).
// Figure: recovery_ms (lower is better).
// Extras: restore_ms (spawn() in the second process, which restores before
// it starts the nodes; RocksDB opens its tables in on_start, after it),
// checkpoint_mb (what the checkpoint takes on disk: its file, and RocksDB's
// table files).
// Check: the second process resumed from a checkpoint (restored id >= 1).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/harness.hpp"
#include "common/restart.hpp"
#include "common/temp_dir.hpp"
#include "troupe/troupe.hpp"
#if BENCH_ROCKSDB
#include "troupe/rocksdb.hpp"
#endif

namespace {

namespace st = troupe::stream;
namespace fs = std::filesystem;
using clock_type = bench::restart_clock;
using bench::now_ns;

/// Counts by key in a table of `n` counters: the state.
struct table_counts : st::node<std::uint64_t, std::uint64_t> {
  static constexpr const char* kind = "table_counts";
  std::size_t n = 0;
  std::vector<std::uint64_t> table;
  void on_start() {
    if (table.empty()) table.assign(n, 0);  // afresh (restore() filled it otherwise)
  }
  void consume(std::uint64_t& x) { send_next(++table[(x * 0x9E3779B97F4A7C15ULL) % n]); }
  void snapshot(st::state_writer& out) const { out.write(table); }
  void restore(st::state_reader& in) {
    in.read(table);
    if (table.size() != n) in.fail("a table of another size");
  }
};

/// The same counts as keyed state (one key per counter), written whole
/// before the first checkpoint when the node starts afresh.
struct keyed_counts : st::node<std::uint64_t, std::uint64_t> {
  static constexpr const char* kind = "table_counts";
  std::size_t n = 0;
  st::keyed_state<std::uint64_t, std::uint64_t>* counts = nullptr;
  void on_start() {
    counts = &keyed<std::uint64_t, std::uint64_t>("counts");
    if (counts->contains(0)) return;  // restored
    for (std::uint64_t k = 0; k < n; ++k) counts->put(k, 0);
  }
  void consume(std::uint64_t& x) {
    send_next(counts->update((x * 0x9E3779B97F4A7C15ULL) % n, [](std::uint64_t& c) { return ++c; }));
  }
};

/// Tells `seen` the first element's time.
struct first_sink : st::node<std::uint64_t, void> {
  static constexpr const char* kind = "first_sink";
  std::atomic<std::int64_t>* seen = nullptr;
  void consume(std::uint64_t&) {
    if (seen->load(std::memory_order_relaxed) == 0) seen->store(now_ns(), std::memory_order_release);
  }
};

/// The job, in this process: runs until `stop` says so; `seen` gets the time
/// of the sink's first element.
/// `backend`: nullptr, the table in memory; else keyed state there.
st::graph spawn_job(troupe::actor_system& sys, const std::string& dir, std::size_t mb, std::atomic<std::int64_t>& seen,
                    std::shared_ptr<st::state_backend> backend) {
  first_sink sink;
  sink.seen = &seen;
  auto numbers = st::generator([](std::uint64_t i) -> std::optional<std::uint64_t> { return i; });
  const st::options o{.checkpoint = {.dir = dir, .interval = std::chrono::milliseconds{1000}, .backend = backend}};
  if (backend) {
    keyed_counts counts;
    counts.n = mb * 1024 * 1024 / (2 * sizeof(std::uint64_t));
    return troupe::spawn_pattern(sys, troupe::pipeline{numbers, counts, sink}, o);
  }
  table_counts counts;
  counts.n = mb * 1024 * 1024 / sizeof(std::uint64_t);
  return troupe::spawn_pattern(sys, troupe::pipeline{numbers, counts, sink}, o);
}

/// What a checkpoint takes on disk (every file but the working tables).
double checkpoint_mb_in(const std::string& dir) {
  std::uintmax_t bytes = 0;
  for (auto& f : fs::recursive_directory_iterator{dir}) {
    if (f.path().string().find("/work.rank-") != std::string::npos || !f.is_regular_file()) continue;
    bytes += f.file_size();
  }
  return static_cast<double>(bytes) / 1048576.0;
}

bench::sample run_with(const bench::params& p, const std::shared_ptr<st::state_backend>& backend) {
  const auto mb = static_cast<std::size_t>(p.get("mb"));
  const bench::temp_dir where{"troupe_recovery_time_"};
  const std::string& dir = where.path();
  const auto deadline = clock_type::now() + std::chrono::seconds{100};

  // 1. The first run, killed once a checkpoint is complete.
  bench::process first;
  bench::fork_child(first, [&] {
    troupe::actor_system sys{troupe::config{.workers = 2}};
    std::atomic<std::int64_t> seen{0};
    auto g = spawn_job(sys, dir, mb, seen, backend);
    g.wait();
  });
  const auto killed = bench::kill_after_checkpoint(first, dir, deadline);
  const auto checkpoint_mb = checkpoint_mb_in(dir);

  // 2. The same job again.
  bench::process second;
  const auto line = bench::fork_and_read(
      second,
      [&](int) {
        troupe::actor_system sys{troupe::config{.workers = 2}};
        std::atomic<std::int64_t> seen{0};
        const auto spawning = now_ns();
        auto g = spawn_job(sys, dir, mb, seen, backend);
        const auto spawned = now_ns();
        while (seen.load(std::memory_order_acquire) == 0) std::this_thread::yield();
        return std::to_string(seen.load()) + " " + std::to_string(spawned - spawning) + " " +
               std::to_string(g.recovery().restored);
      },
      deadline);
  long long first_at = 0, restore_ns = 0;
  unsigned long long restored = 0;
  if (std::sscanf(line.c_str(), "%lld %lld %llu", &first_at, &restore_ns, &restored) != 3)
    throw std::runtime_error("the restarted run reported '" + line + "'");
  if (restored == 0) throw std::runtime_error("the restarted run did not resume from a checkpoint");
  bench::sample s;
  s.wall_s = static_cast<double>(first_at - killed) / 1e9;
  s.add("recovery_ms", static_cast<double>(first_at - killed) / 1e6, "ms");
  s.add("restore_ms", static_cast<double>(restore_ns) / 1e6, "ms");
  s.add("checkpoint_mb", checkpoint_mb, "MB");
  return s;
}

bench::sample run_heap(const bench::params& p) { return run_with(p, nullptr); }

bench::sample run_rocksdb(const bench::params& p) {
#if BENCH_ROCKSDB
  return run_with(p, troupe::rocksdb::backend());
#else
  (void)p;
  throw bench::not_available("troupe::rocksdb is not built (librocksdb-dev)");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "recovery_time";
  s.description =
      "a job killed with SIGKILL and started anew: from the kill to its first output, 10 and 100 MB of state";
  s.impls = {{"heap", run_heap}, {"rocksdb", run_rocksdb}};
  s.primary = bench::extra_metric("recovery_ms", "ms", false, "recovery_ms");
  s.variants = [](bool) { return std::vector<bench::variant>{{"10 MB", {{"mb", 10}}}, {"100 MB", {{"mb", 100}}}}; };
  s.default_runs = 5;
  s.timeout_s = 150;
  return bench::run_main(argc, argv, s);
}
