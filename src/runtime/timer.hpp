// Timer thread (private): runs tasks at a deadline (delayed sends, request
// timeouts). Sleeps on a condition variable while nothing is due, so an idle
// system does not spin here.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

namespace troupe::detail {

class timer_task {
 public:
  virtual ~timer_task() = default;
  /// Runs on the timer thread at (or after) the deadline.
  virtual void fire() noexcept = 0;
  /// Runs instead of fire() when the timer stops first.
  virtual void discard() noexcept = 0;
};

class timer {
 public:
  using clock = std::chrono::steady_clock;

  timer() = default;
  ~timer() { stop(); }

  void start();
  /// Discards every pending task (calls discard()) and joins the thread.
  void stop() noexcept;
  void add(clock::time_point when, std::unique_ptr<timer_task> task);
  std::size_t pending() const;

 private:
  struct entry {
    clock::time_point when;
    std::uint64_t seq;
    timer_task* task;
    bool operator>(const entry& other) const noexcept {
      return when != other.when ? when > other.when : seq > other.seq;
    }
  };
  void run();

  mutable std::mutex mtx_;
  std::condition_variable cv_;
  std::priority_queue<entry, std::vector<entry>, std::greater<entry>> queue_;
  std::uint64_t seq_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace troupe::detail
