// line_probe.hpp: one cache line bounced between two threads, the floor under
// every cross-thread figure. On the 2-core virtual machines a round trip takes
// ~50-80 ns in some phases and ~320-350 ns in others (the host places the two
// virtual CPUs near or far apart; docs/performance.md, "The slow phases are
// the machine's"), so the harness records it beside each variant's runs and
// bench_micro measures it on its own.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace bench {

/// The other end: a thread that answers every odd value written to `line`
/// with that value + 1, until destroyed.
class line_echo {
 public:
  explicit line_echo(std::atomic<std::int64_t>& line)
      : thread_{[&line, this] {
          std::int64_t answered = 0;
          while (!stop_.load(std::memory_order_relaxed)) {
            const auto v = line.load(std::memory_order_acquire);
            if (v != answered && (v & 1) != 0) {
              answered = v + 1;
              line.store(answered, std::memory_order_release);
            }
          }
        }} {}
  line_echo(const line_echo&) = delete;
  line_echo& operator=(const line_echo&) = delete;
  ~line_echo() {
    stop_.store(true, std::memory_order_relaxed);
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// Mean round trip in ns over up to `trips` round trips, within `budget` at
/// most (a descheduled partner cannot hold it up); 0 if none completed.
inline double line_round_trip_ns(int trips = 20'000, std::chrono::milliseconds budget = std::chrono::milliseconds{50}) {
  using clock = std::chrono::steady_clock;
  alignas(64) std::atomic<std::int64_t> line{0};
  line_echo echo{line};
  // Untimed trips first: the echo thread has to start, and an idle virtual
  // CPU to wake up (the first trips took ~750 ns where the rest took ~110).
  const auto deadline = clock::now() + budget;
  std::int64_t next = 1;
  for (int warm = 0; warm < 2'000; ++warm, next += 2) {
    line.store(next, std::memory_order_release);
    while (line.load(std::memory_order_acquire) != next + 1)
      if (clock::now() > deadline) return 0.0;
  }
  const auto start = clock::now();
  auto last = start;
  int done = 0;
  int counted = 0;  // trips completed by `last`
  bool late = false;
  for (; done < trips; next += 2) {
    line.store(next, std::memory_order_release);
    unsigned polls = 0;
    while (line.load(std::memory_order_acquire) != next + 1)
      if ((++polls & 1023U) == 0 && clock::now() > deadline) {
        late = true;
        break;
      }
    if (late) break;
    if ((++done & 255) == 0) {  // read the clock rarely: it costs ~20 ns
      last = clock::now();
      counted = done;
      if (last > deadline) break;
    }
  }
  if ((!late && done != counted) || (counted == 0 && done > 0)) {
    last = clock::now();
    counted = done;
  }
  return counted > 0 ? std::chrono::duration<double, std::nano>(last - start).count() / counted : 0.0;
}

}  // namespace bench
