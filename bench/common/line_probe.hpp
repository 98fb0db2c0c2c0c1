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

/// A cache line and a thread that answers every odd value written to it with
/// that value + 1, until destroyed.
class line_pair {
 public:
  using clock = std::chrono::steady_clock;

  line_pair()
      : echo_{[this] {
          std::int64_t answered = 0;
          while (!stop_.load(std::memory_order_relaxed)) {
            const auto v = line_.load(std::memory_order_acquire);
            if (v != answered && (v & 1) != 0) {
              answered = v + 1;
              line_.store(answered, std::memory_order_release);
            }
          }
        }} {}
  line_pair(const line_pair&) = delete;
  line_pair& operator=(const line_pair&) = delete;
  ~line_pair() {
    stop_.store(true, std::memory_order_relaxed);
    echo_.join();
  }

  /// One round trip; false if `deadline` passed before the answer came (the
  /// clock is read once in 1024 polls: it costs ~20 ns).
  bool round_trip(clock::time_point deadline = clock::time_point::max()) {
    line_.store(next_, std::memory_order_release);
    unsigned polls = 0;
    while (line_.load(std::memory_order_acquire) != next_ + 1)
      if ((++polls & 1023U) == 0 && clock::now() > deadline) return false;
    next_ += 2;
    return true;
  }

 private:
  alignas(64) std::atomic<std::int64_t> line_{0};
  std::int64_t next_ = 1;
  std::atomic<bool> stop_{false};
  std::thread echo_;  // last: starts once the members it reads exist
};

/// Mean round trip in ns over up to `trips` round trips, within `budget` at
/// most (a descheduled partner cannot hold it up; a trip cut short by the
/// budget counts in the time, not in the trips); 0 if none completed.
inline double line_round_trip_ns(int trips = 20'000, std::chrono::milliseconds budget = std::chrono::milliseconds{50}) {
  using clock = line_pair::clock;
  line_pair pair;
  const auto deadline = clock::now() + budget;
  // Untimed trips first: the echo thread has to start, and an idle virtual
  // CPU to wake up (the first trips took ~750 ns where the rest took ~110).
  for (int warm = 0; warm < 2'000; ++warm)
    if (!pair.round_trip(deadline)) return 0.0;
  const auto start = clock::now();
  int done = 0;
  while (done < trips && pair.round_trip(deadline))
    if ((++done & 255) == 0 && clock::now() > deadline) break;  // the clock, rarely
  const auto elapsed = std::chrono::duration<double, std::nano>(clock::now() - start).count();
  return done > 0 ? elapsed / done : 0.0;
}

}  // namespace bench
