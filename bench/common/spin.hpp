// Busy-polling helper for the plain-threads baselines: spin with the CPU's
// pause hint, and after a while give the core away (sched_yield) so that a
// descheduled partner thread can run when the machine is oversubscribed
// (more spinning threads than free cores). It never blocks.
#pragma once

#include <thread>

namespace bench {

class spin_wait {
 public:
  void operator()() {
    if (++spins_ < yield_after) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
    } else {
      spins_ = 0;
      std::this_thread::yield();
    }
  }

  void reset() { spins_ = 0; }

 private:
  static constexpr unsigned yield_after = 1024;
  unsigned spins_ = 0;
};

}  // namespace bench
