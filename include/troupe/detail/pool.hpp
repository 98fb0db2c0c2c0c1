// layer: util
// pool.hpp: a small-object allocator for messages and other per-message blocks.
// Use: pool_allocate/pool_deallocate with the same size, from any threads.
// Why: on these machines the first touch of a fresh page costs 6-10 us, and
// glibc malloc hands cross-thread frees back slowly; recycling blocks through
// per-thread caches keeps the typed paths free of malloc.
// Cost: a thread-local free list push/pop per block (inlined); every 128
// blocks a mutex-protected exchange of a whole batch with a global depot.
// Sizes above pool_max_size go straight to operator new. Under
// AddressSanitizer every block goes to operator new, so misuse is reported.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

#include "troupe/detail/tuning.hpp"

namespace troupe {

inline constexpr std::size_t pool_max_size = 512;

namespace detail {

inline constexpr std::size_t pool_classes = 5;  // 32, 64, 128, 256, 512 bytes

struct pool_block {
  pool_block* next;
};

/// Limit of a thread's free list per size class before it spills a batch.
inline constexpr std::size_t pool_local_limit = tuning::pool_local_limit;

/// A thread's free lists. A thread's blocks must go back to the depot when
/// it ends, which takes a thread_local with a destructor (pool.cpp), armed by
/// the thread's first trip into pool.cpp. A thread that only frees would never
/// make that trip below the limit, so a thread starts with every count at the
/// limit (`unarmed`): its first free of each class goes out of line to
/// pool_spill, which arms the destructor and sets the true counts. The inline
/// paths pay nothing for it.
struct pool_cache {
  pool_block* head[pool_classes];
  std::size_t count[pool_classes];
};
inline constexpr std::size_t pool_unarmed = pool_local_limit;

extern thread_local constinit pool_cache pool_tls;
void* pool_refill(std::size_t size_class);
void pool_spill(std::size_t size_class) noexcept;

constexpr std::size_t pool_class_of(std::size_t size) noexcept {
  return size <= 32 ? 0 : size <= 64 ? 1 : size <= 128 ? 2 : size <= 256 ? 3 : 4;
}

}  // namespace detail

#if defined(__SANITIZE_ADDRESS__)
inline void* pool_allocate(std::size_t size) { return ::operator new(size); }
inline void pool_deallocate(void* p, std::size_t) noexcept { ::operator delete(p); }
#else
inline void* pool_allocate(std::size_t size) {
  if (size > pool_max_size) return ::operator new(size);
  const auto c = detail::pool_class_of(size);
  auto& cache = detail::pool_tls;
  if (auto* b = cache.head[c]) {
    cache.head[c] = b->next;
    --cache.count[c];
    return b;
  }
  return detail::pool_refill(c);
}

inline void pool_deallocate(void* p, std::size_t size) noexcept {
  if (size > pool_max_size) {
    ::operator delete(p);
    return;
  }
  const auto c = detail::pool_class_of(size);
  auto& cache = detail::pool_tls;
  auto* b = static_cast<detail::pool_block*>(p);
  b->next = cache.head[c];
  cache.head[c] = b;
  if (++cache.count[c] > detail::pool_local_limit) detail::pool_spill(c);
}
#endif

/// Constructs a T in a pool block (the block goes back if the constructor throws).
template <class T, class... Args>
T* pool_new(Args&&... args) {
  void* mem = pool_allocate(sizeof(T));
  try {
    return ::new (mem) T(std::forward<Args>(args)...);
  } catch (...) {
    pool_deallocate(mem, sizeof(T));
    throw;
  }
}

/// Destroys a T made by pool_new and returns its block.
template <class T>
void pool_delete(T* p) noexcept {
  p->~T();
  pool_deallocate(p, sizeof(T));
}

}  // namespace troupe
