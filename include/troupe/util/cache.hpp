// cache.hpp: cache-line size, the CPU "pause" hint and the spin-then-yield
// step used by every spin loop.
// Use: pad producer/consumer indices apart (alignas(cache_line)), relax inside
// spin-waits. Cost: none at run time; padding costs memory per padded field.
#pragma once

#include <cstddef>
#include <thread>

#include "troupe/detail/tuning.hpp"

namespace troupe {

/// Size used to keep independently written fields on separate cache lines.
/// 64 bytes on x86-64 and most ARM servers; two lines would also defeat the
/// adjacent-line prefetcher, but doubles the footprint of every mailbox.
inline constexpr std::size_t cache_line = 64;

/// Tells the CPU we are spinning (x86 `pause`, ARM `yield`); saves power and
/// lets a sibling hyper-thread run.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

/// One step of a bounded busy wait: the CPU hint for the first 64 calls
/// (counted in `spins`), then yielding the thread to the OS.
inline void spin_then_yield(unsigned& spins) noexcept {
  if (++spins < detail::tuning::spins_before_yield) cpu_relax();
  else std::this_thread::yield();
}

}  // namespace troupe
