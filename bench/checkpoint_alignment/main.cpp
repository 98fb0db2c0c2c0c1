// checkpoint_alignment: how long a checkpoint takes in a backpressured
// graph, with aligned and with unaligned barriers.
//
// The graph: two generator replicas at full speed -> one slow stage (a busy
// wait of `work_us` per element: the bottleneck, so both of its input
// channels stay full) -> a sink that counts. Channels of `capacity` slots.
// A checkpoint every 100 ms, state in memory, in a fresh directory under
// $TMPDIR. With aligned barriers, a barrier reaches the slow stage behind
// the full channel it was sent into, and the stage then waits for it on
// its other input; with unaligned barriers the stage snapshots when the
// first barrier shows and saves the elements queued before the barriers.
//
// params:
//   work_us   the slow stage's time per element (microseconds)
//   capacity  slots per channel
//   seconds   how long the sources run
// impls:
//   aligned     options.checkpoint.unaligned = false
//   unaligned   options.checkpoint.unaligned = true
// Measured region: the graph from spawn to its end.
// Figure: checkpoint_ms, the mean time from a checkpoint's trigger to its
// completion (graph::checkpoints()); lower is better.
// Extras: checkpoint_max_ms, checkpoints (completed), tuples_per_s (at the
// sink: what backpressure leaves), checkpoint_kb (the last file).
// Check: at least 5 checkpoints completed; the sink got elements.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/harness.hpp"
#include "common/temp_dir.hpp"
#include "troupe/troupe.hpp"

namespace {

namespace st = troupe::stream;

/// Counts what it gets (its state: the count).
struct counting_sink : st::node<std::uint64_t, void> {
  static constexpr const char* kind = "counting_sink";
  std::atomic<std::uint64_t>* seen = nullptr;
  std::uint64_t n = 0;
  void consume(std::uint64_t&) { seen->store(++n, std::memory_order_relaxed); }
  void snapshot(st::state_writer& out) const { out.write(n); }
  void restore(st::state_reader& in) { in.read(n); }
};

bench::sample run(const bench::params& p, bool unaligned) {
  const bench::temp_dir where{"troupe_checkpoint_alignment_"};
  const std::string& dir = where.path();
  const auto work_ns = static_cast<std::uint64_t>(p.get("work_us")) * 1000;
  const auto until = st::now() + static_cast<std::uint64_t>(p.get("seconds")) * 1'000'000'000ULL;
  std::atomic<std::uint64_t> seen{0};
  counting_sink sink;
  sink.seen = &seen;
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto start = std::chrono::steady_clock::now();
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{troupe::farm{st::generator([until](std::uint64_t i) -> std::optional<std::uint64_t> {
                                      if ((i & 255) == 0 && st::now() >= until) return std::nullopt;
                                      return i;
                                    }),
                                    2},
                       st::map([work_ns](std::uint64_t x) {
                         for (const auto t = st::now() + work_ns; st::now() < t;) {
                         }
                         return x;
                       }),
                       sink},
      st::options{.capacity = static_cast<std::size_t>(p.get("capacity")),
                  .checkpoint = {.dir = dir, .interval = std::chrono::milliseconds{100}, .unaligned = unaligned}});
  g.wait();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto c = g.checkpoints();
  if (c.completed < 5)
    throw std::runtime_error("only " + std::to_string(c.completed) + " checkpoint(s) completed: too few to measure");
  if (seen.load() == 0) throw std::runtime_error("the sink got nothing");
  bench::sample s;
  s.wall_s = elapsed;
  const auto ms = [](std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e6; };
  s.add("checkpoint_ms", ms(c.total_duration) / static_cast<double>(c.completed), "ms");
  s.add("checkpoint_max_ms", ms(c.max_duration), "ms");
  s.add("checkpoints", static_cast<double>(c.completed), "");
  s.add("tuples_per_s", static_cast<double>(seen.load()) / elapsed, "tuples/s", true);
  s.add("checkpoint_kb", static_cast<double>(c.last_bytes) / 1024.0, "KiB");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "checkpoint_alignment";
  s.description = "a backpressured stage fed by two sources: mean time per checkpoint, aligned vs unaligned barriers";
  s.impls = {{"aligned", [](const bench::params& p) { return run(p, false); }},
             {"unaligned", [](const bench::params& p) { return run(p, true); }}};
  s.primary = bench::extra_metric("checkpoint_ms", "ms", false, "checkpoint_ms");
  s.variants = [](bool full) {
    const std::int64_t seconds = full ? 10 : 3;
    return std::vector<bench::variant>{
        {"5 us, 1024 slots", {{"work_us", 5}, {"capacity", 1024}, {"seconds", seconds}}},
        {"20 us, 1024 slots", {{"work_us", 20}, {"capacity", 1024}, {"seconds", seconds}}}};
  };
  s.default_runs = 3;
  s.timeout_s = 120;
  return bench::run_main(argc, argv, s);
}
