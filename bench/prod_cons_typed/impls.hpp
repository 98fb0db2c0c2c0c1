// prod_cons_typed: one producer hands `items` std::int64_t values (0, 1, 2,
// ...) to one consumer over one typed channel: the bare cost of a streaming
// hop, against the raw queues it is built on.
//
// params:
//   items     values sent (quick 5'000'000, full 20'000'000)
//   workers   scheduler threads of the troupe actor system (2)
// impls:
//   troupe       troupe's typed streaming layer, source -> sink, a channel of
//                1024 slots, placement::own_thread() (each node on its own thread)
//   troupe_pool  the same graph on the actor system's pool of 2 workers
//   raw_queue    two std::threads and one troupe::spsc_ring<std::int64_t> of
//                1024 slots (the ring under troupe's channels), busy polling
//                with the bench's spin_wait
//   rwq          the same with moodycamel::ReaderWriterQueue<std::int64_t>{1024}
//                (which rounds up: four blocks of 512 slots, room for 1533 to
//                2044 values, so it holds more than the 1024-slot ring)
//   lamport      the bare-hop floor, written in the benchmark: Lamport's ring
//                of 1024 int64 slots, head and tail on separate cache lines,
//                no cached indices, two std::threads polling without backoff
// Measured region: from the start until the consumer has the last value
// (troupe impls: from spawn_pattern until graph::wait returns, so building
// and starting the graph are inside; threads impls: from starting the
// consumer thread until it has joined).
// Figure: ns_per_item = wall_s * 1e9 / items.
// Check: the consumer counts `items` values that sum to items*(items-1)/2.
#pragma once

#include <cstdint>

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_troupe_pool(const params& p);
sample run_raw_queue(const params& p);
sample run_rwq(const params& p);
sample run_lamport(const params& p);

namespace prod_cons_typed {

/// The consumer's bookkeeping.
struct tally {
  std::int64_t count = 0;
  std::int64_t sum = 0;
  void add(std::int64_t v) {
    ++count;
    sum += v;
  }
  void check(std::int64_t items) const {
    check_eq("items at the consumer", items, count);
    check_eq("sum of items", items * (items - 1) / 2, sum);
  }
};

}  // namespace prod_cons_typed
}  // namespace bench
