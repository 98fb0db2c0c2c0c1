// layer: util
// semaphore.hpp: the counting semaphore that threads of actors sleep on
// (actors on threads of their own, blocking actors), over POSIX sem_t.
// Why not std::counting_semaphore: libstdc++ 12's timed acquire first sleeps
// in a backoff loop (sleep_for(elapsed / 2), for up to 128 ms) and only then
// waits on the futex, so a timed wait overshoots its deadline by up to half
// of what it has waited (a 5 ms receive_for took up to 9 ms). sem_clockwait
// on CLOCK_MONOTONIC (glibc 2.30) wakes at the deadline, as the timer thread
// of event actors does. release() is one atomic add and, only when a thread
// sleeps, a futex wake, as before.
#pragma once

#include <semaphore.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <system_error>

namespace troupe::detail {

class semaphore {
 public:
  explicit semaphore(unsigned initial) {
    if (sem_init(&sem_, 0, initial) != 0) throw std::system_error(errno, std::generic_category(), "sem_init");
  }
  ~semaphore() { sem_destroy(&sem_); }
  semaphore(const semaphore&) = delete;
  semaphore& operator=(const semaphore&) = delete;

  void release() noexcept { sem_post(&sem_); }
  void acquire() noexcept {
    while (sem_wait(&sem_) != 0) {  // EINTR: a signal handler ran
    }
  }
  /// false when `deadline` (steady_clock, i.e. CLOCK_MONOTONIC) passed first.
  bool try_acquire_until(std::chrono::steady_clock::time_point deadline) noexcept {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
    timespec ts{};
    if (ns > 0) {
      ts.tv_sec = static_cast<std::time_t>(ns / 1'000'000'000);
      ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    }
    for (;;) {
      if (sem_clockwait(&sem_, CLOCK_MONOTONIC, &ts) == 0) return true;
      if (errno != EINTR) return false;  // ETIMEDOUT
    }
  }

 private:
  sem_t sem_;
};

}  // namespace troupe::detail
