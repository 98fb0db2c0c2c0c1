// bench_micro: Google Benchmark figures for the bare queues the "threads"
// baselines use (and troupe's mailboxes are compared against):
//   - moodycamel::ReaderWriterQueue (SPSC): enqueue+dequeue on one thread,
//     and the cross-thread hand-off (producer thread -> consumer thread)
//   - moodycamel::ConcurrentQueue (MPMC): enqueue+dequeue on one thread with
//     and without tokens, bulk, and under contention (->Threads(2))
//   - a bare cache line bounced between two threads: the floor under all of
//     them, and a probe of where the host has placed the virtual CPUs
// No dependency on troupe.
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <concurrentqueue/concurrentqueue.h>
#include <readerwriterqueue/readerwriterqueue.h>

#include "common/line_probe.hpp"
#include "common/spin.hpp"
#include "micro/handoff.hpp"

namespace {

// -- SPSC: ReaderWriterQueue ---------------------------------------------------

void rwq_enqueue_dequeue(benchmark::State& state) {
  moodycamel::ReaderWriterQueue<std::int32_t> q{1024};
  std::int32_t x = 0;
  std::int32_t out = 0;
  for (auto _ : state) {
    q.try_enqueue(x++);
    q.try_dequeue(out);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(rwq_enqueue_dequeue);

/// Items cross from this thread to a busy-polling consumer thread; the time
/// per iteration is the throughput-bound cost of one hand-off.
void rwq_handoff(benchmark::State& state) {
  moodycamel::ReaderWriterQueue<std::int32_t> q{1 << 16};
  bench::run_handoff(
      state, [&](std::int32_t x) { return q.try_enqueue(x); }, [&](std::int32_t& v) { return q.try_dequeue(v); });
}
BENCHMARK(rwq_handoff)->UseRealTime();

/// One item at a time, ping-pong style: latency of a round trip through two
/// SPSC queues between two busy-polling threads.
void rwq_round_trip(benchmark::State& state) {
  moodycamel::ReaderWriterQueue<std::int32_t> there{64};
  moodycamel::ReaderWriterQueue<std::int32_t> back{64};
  std::atomic<bool> stop{false};
  std::thread echo{[&] {
    std::int32_t v;
    bench::spin_wait wait;
    while (!stop.load(std::memory_order_relaxed)) {
      if (there.try_dequeue(v)) back.enqueue(v);
      else wait();
    }
  }};
  std::int32_t x = 0;
  std::int32_t y = 0;
  bench::spin_wait wait;
  for (auto _ : state) {
    there.enqueue(x++);
    while (!back.try_dequeue(y)) wait();
    benchmark::DoNotOptimize(y);
  }
  stop.store(true);
  echo.join();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(rwq_round_trip)->UseRealTime();

/// The floor under every cross-thread hand-off: one cache line bounced
/// between two threads (common/line_probe.hpp); run it beside a benchmark to
/// tell which phase of the virtual machine a figure comes from.
void cache_line_round_trip(benchmark::State& state) {
  bench::line_pair pair;
  for (auto _ : state) pair.round_trip();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(cache_line_round_trip)->UseRealTime();

// -- MPMC: ConcurrentQueue ------------------------------------------------------

void cq_enqueue_dequeue(benchmark::State& state) {
  moodycamel::ConcurrentQueue<std::int32_t> q;
  std::int32_t x = 0;
  std::int32_t out = 0;
  for (auto _ : state) {
    q.enqueue(x++);
    q.try_dequeue(out);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(cq_enqueue_dequeue);

void cq_enqueue_dequeue_tokens(benchmark::State& state) {
  moodycamel::ConcurrentQueue<std::int32_t> q;
  moodycamel::ProducerToken ptok{q};
  moodycamel::ConsumerToken ctok{q};
  std::int32_t x = 0;
  std::int32_t out = 0;
  for (auto _ : state) {
    q.enqueue(ptok, x++);
    q.try_dequeue(ctok, out);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(cq_enqueue_dequeue_tokens);

void cq_bulk(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  moodycamel::ConcurrentQueue<std::int32_t> q;
  moodycamel::ProducerToken ptok{q};
  moodycamel::ConsumerToken ctok{q};
  std::vector<std::int32_t> in(n, 7);
  std::vector<std::int32_t> out(n);
  for (auto _ : state) {
    q.enqueue_bulk(ptok, in.data(), n);
    auto got = q.try_dequeue_bulk(ctok, out.data(), n);
    benchmark::DoNotOptimize(got);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}
BENCHMARK(cq_bulk)->Arg(64);

/// Every thread enqueues and dequeues on one shared queue (contention).
void cq_shared(benchmark::State& state) {
  static moodycamel::ConcurrentQueue<std::int32_t> shared_cq;
  for (auto _ : state) {
    shared_cq.enqueue(1);
    std::int32_t out;
    benchmark::DoNotOptimize(shared_cq.try_dequeue(out));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(cq_shared)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
