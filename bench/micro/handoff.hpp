// The shape shared by the queue hand-off micro benchmarks: items cross from
// the benchmark thread to a busy-polling consumer thread; the time per
// iteration is the throughput-bound cost of one hand-off. `push(x)` and
// `pop(x)` are the queue's non-blocking operations.
#pragma once

#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "common/spin.hpp"

namespace bench {

template <class Push, class Pop>
void run_handoff(benchmark::State& state, Push push, Pop pop) {
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> consumed{0};
  std::thread consumer{[&] {
    std::int32_t v;
    std::int64_t n = 0;
    spin_wait wait;
    for (;;) {
      if (pop(v)) {
        ++n;
        continue;
      }
      wait();
      if (stop.load(std::memory_order_acquire)) {
        while (pop(v)) ++n;
        break;
      }
    }
    consumed.store(n);
  }};
  std::int32_t x = 0;
  spin_wait wait;
  for (auto _ : state) {
    while (!push(x)) wait();  // full: spin
    ++x;
  }
  stop.store(true, std::memory_order_release);
  consumer.join();
  if (consumed.load() != state.iterations()) state.SkipWithError("lost items in the hand-off");
  state.SetItemsProcessed(state.iterations());
}

}  // namespace bench
