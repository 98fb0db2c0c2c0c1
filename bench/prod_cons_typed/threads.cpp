// prod_cons_typed, plain threads: a producer std::thread and a consumer
// std::thread around one bounded SPSC queue of 1024 slots, both busy polling
// (the bench's spin_wait): troupe's own spsc_ring (`raw_queue`) or
// moodycamel's ReaderWriterQueue (`rwq`).
#include "impls.hpp"

#include <readerwriterqueue/readerwriterqueue.h>

#include <atomic>
#include <memory>
#include <thread>

#include <troupe/util/spsc_ring.hpp>

#include "common/spin.hpp"

namespace {

// push(v) / pop(out): the queue's non-blocking enqueue / dequeue (false: full / empty).
template <class Push, class Pop>
bench::sample run_pair(std::int64_t items, Push push, Pop pop) {
  bench::prod_cons_typed::tally t;
  std::atomic<bool> go{false};
  std::thread producer{[&] {
    bench::spin_wait wait;
    while (!go.load(std::memory_order_acquire)) wait();
    wait.reset();
    for (std::int64_t i = 0; i < items; ++i) {
      while (!push(i)) wait();  // full
      wait.reset();
    }
  }};
  bench::stopwatch sw;
  std::thread consumer{[&] {
    // Counts in locals (registers), so nothing the consumer writes per item
    // can share a cache line with the queue's fields.
    bench::prod_cons_typed::tally local;
    bench::spin_wait wait;
    std::int64_t x;
    while (local.count < items) {
      if (pop(x)) {
        local.add(x);
        wait.reset();
      } else {
        wait();  // empty
      }
    }
    t = local;
  }};
  go.store(true, std::memory_order_release);
  consumer.join();
  bench::sample s;
  s.wall_s = sw.seconds();
  producer.join();
  t.check(items);
  return s;
}

}  // namespace

bench::sample bench::run_raw_queue(const params& p) {
  // On the heap, away from the stack frames the threads write to.
  auto ring = std::make_unique<troupe::spsc_ring<std::int64_t>>(1024);
  auto& q = *ring;
  return run_pair(
      p.get("items"), [&q](std::int64_t v) { return q.try_push(std::move(v)); },
      [&q](std::int64_t& out) { return q.try_pop(out); });
}

bench::sample bench::run_rwq(const params& p) {
  auto queue = std::make_unique<moodycamel::ReaderWriterQueue<std::int64_t>>(1024);
  auto& q = *queue;
  return run_pair(
      p.get("items"), [&q](std::int64_t v) { return q.try_enqueue(v); },
      [&q](std::int64_t& out) { return q.try_dequeue(out); });
}
