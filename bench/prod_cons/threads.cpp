// prod_cons, plain threads: a raw moodycamel SPSC ReaderWriterQueue<int32_t>;
// the producer thread spins while the queue is full (bounded, no allocation
// in the loop), the consumer thread busy-polls.
#include "impls.hpp"

#include <atomic>
#include <thread>

#include <readerwriterqueue/readerwriterqueue.h>

#include "common/spin.hpp"

bench::sample bench::run_threads(const params& p) {
  const auto messages = p.get("messages");
  check(messages > 0 && messages <= (std::int64_t{1} << 31), "messages out of int32 range");
  moodycamel::ReaderWriterQueue<std::int32_t> q{1 << 16};
  std::atomic<bool> go{false};
  std::thread producer{[&] {
    spin_wait wait;
    while (!go.load(std::memory_order_acquire)) wait();
    for (std::int64_t i = 0; i < messages; ++i) {
      while (!q.try_enqueue(static_cast<std::int32_t>(i))) wait();  // queue full: spin
      wait.reset();
    }
  }};
  std::int64_t received = 0;
  std::int64_t sum = 0;
  stopwatch sw;
  go.store(true, std::memory_order_release);
  std::int32_t x;
  spin_wait wait;
  while (received < messages) {
    if (q.try_dequeue(x)) {
      sum += x;
      ++received;
      wait.reset();
    } else {
      wait();  // empty: busy poll
    }
  }
  sample s;
  s.wall_s = sw.seconds();
  producer.join();
  check_eq("messages received", messages, received);
  check_eq("sum of received values", messages * (messages - 1) / 2, sum);
  return s;
}
