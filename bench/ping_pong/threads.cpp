// ping_pong, plain threads: two moodycamel SPSC queues (ping->pong and
// pong->ping), busy polling (common/spin.hpp). With workers == 1 one thread plays both sides.
#include "impls.hpp"

#include <atomic>
#include <thread>

#include <readerwriterqueue/readerwriterqueue.h>

#include "common/spin.hpp"

namespace {

using queue = moodycamel::ReaderWriterQueue<std::int64_t>;

std::int64_t pop_spin(queue& q) {
  std::int64_t x;
  bench::spin_wait wait;
  while (!q.try_dequeue(x)) wait();  // busy poll
  return x;
}

}  // namespace

bench::sample bench::run_threads(const params& p) {
  const auto round_trips = p.get("round_trips");
  const auto workers = p.get("workers");
  queue to_pong{64};
  queue to_ping{64};
  sample s;
  std::int64_t received = 0;
  std::int64_t bad_seq = 0;
  if (workers <= 1) {
    stopwatch sw;
    for (std::int64_t seq = 1; seq <= round_trips; ++seq) {
      to_pong.enqueue(seq);
      to_ping.enqueue(pop_spin(to_pong));  // pong's turn
      auto back = pop_spin(to_ping);       // ping's turn
      if (back != seq && bad_seq == 0) bad_seq = seq;
      ++received;
    }
    s.wall_s = sw.seconds();
  } else {
    std::atomic<bool> go{false};
    std::thread ponger{[&] {
      spin_wait wait;
      while (!go.load(std::memory_order_acquire)) wait();
      for (std::int64_t i = 0; i < round_trips; ++i) to_ping.enqueue(pop_spin(to_pong));
    }};
    go.store(true, std::memory_order_release);
    stopwatch sw;
    for (std::int64_t seq = 1; seq <= round_trips; ++seq) {
      to_pong.enqueue(seq);
      auto back = pop_spin(to_ping);
      if (back != seq && bad_seq == 0) bad_seq = seq;
      ++received;
    }
    s.wall_s = sw.seconds();
    ponger.join();
  }
  check(bad_seq == 0, "pong out of order at seq " + std::to_string(bad_seq));
  check_eq("pongs received", round_trips, received);
  return s;
}
