// prod_cons_typed, the bare-hop floor: Lamport's single-producer /
// single-consumer ring as FastFlow-style code writes it, with nothing of
// troupe in it. A fixed array of 1024 int64 slots; the consumer's index
// (head) and the producer's index (tail) each on a cache line of its own,
// away from the slots; every push reads head and every pop reads tail (no
// cached copies); producer and consumer each on a std::thread, polling
// without backoff (no pause, no yield).
#include "impls.hpp"

#include <atomic>
#include <cstddef>
#include <memory>
#include <thread>

namespace {

class lamport_ring {
 public:
  static constexpr std::size_t slots = 1024;  // a power of two: the index wraps with a mask

  bool push(std::int64_t v) {
    const auto t = tail_.load(std::memory_order_relaxed);
    if (t - head_.load(std::memory_order_acquire) == slots) return false;  // full
    buf_[t & (slots - 1)] = v;
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }

  bool pop(std::int64_t& out) {
    const auto h = head_.load(std::memory_order_relaxed);
    if (h == tail_.load(std::memory_order_acquire)) return false;  // empty
    out = buf_[h & (slots - 1)];
    head_.store(h + 1, std::memory_order_release);
    return true;
  }

 private:
  alignas(64) std::atomic<std::size_t> head_{0};  // the consumer writes, the producer reads
  alignas(64) std::atomic<std::size_t> tail_{0};  // the producer writes, the consumer reads
  alignas(64) std::int64_t buf_[slots] = {};
};

}  // namespace

bench::sample bench::run_lamport(const params& p) {
  const auto items = p.get("items");
  auto ring = std::make_unique<lamport_ring>();  // on the heap, away from the threads' stacks
  auto& q = *ring;
  bench::prod_cons_typed::tally t;
  std::atomic<bool> go{false};
  std::thread producer{[&] {
    while (!go.load(std::memory_order_acquire)) {
    }
    for (std::int64_t i = 0; i < items; ++i)
      while (!q.push(i)) {
      }
  }};
  stopwatch sw;
  std::thread consumer{[&] {
    bench::prod_cons_typed::tally local;  // in registers, off the ring's lines
    std::int64_t x;
    while (local.count < items)
      if (q.pop(x)) local.add(x);
    t = local;
  }};
  go.store(true, std::memory_order_release);
  consumer.join();
  sample s;
  s.wall_s = sw.seconds();
  producer.join();
  t.check(items);
  return s;
}
