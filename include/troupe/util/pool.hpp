// pool.hpp: a small-object allocator for messages and other per-message blocks.
// Use: pool_allocate/pool_deallocate with the same size, from any threads.
// Why: on these machines the first touch of a fresh page costs 6-10 us, and
// glibc malloc hands cross-thread frees back slowly; recycling blocks through
// per-thread caches keeps the typed paths free of malloc.
// Cost: a thread-local free list push/pop per block; every 128 blocks a
// mutex-protected exchange of a whole batch with a global depot.
// Sizes above pool_max_size go straight to operator new.
#pragma once

#include <cstddef>

namespace troupe {

inline constexpr std::size_t pool_max_size = 512;

void* pool_allocate(std::size_t size);
void pool_deallocate(void* p, std::size_t size) noexcept;

}  // namespace troupe
