// The message pool (troupe/detail/pool.hpp): blocks freed on one thread go
// through the depot in chains and are handed out again on another, each to one
// owner at a time, and a thread's leftovers reach the depot when it ends.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <unordered_set>
#include <vector>

#include "troupe/detail/pool.hpp"

namespace {

constexpr std::size_t block = 64;

// Allocates `n` blocks on a thread of its own and fills each with its index;
// with `free_after`, the same thread then frees them (its free list must hold
// exactly what its counts say, or spilling walks off the end of it).
std::vector<void*> allocate_on_a_thread(std::size_t n, bool free_after = false) {
  std::vector<void*> out;
  std::thread{[&] {
    for (std::size_t i = 0; i < n; ++i) {
      void* p = troupe::pool_allocate(block);
      std::memset(p, static_cast<int>(i & 0xff), block);
      out.push_back(p);
    }
    if (free_after)
      for (void* p : out) troupe::pool_deallocate(p, block);
  }}.join();
  return out;
}

void free_on_a_thread(const std::vector<void*>& blocks) {
  std::thread{[&] {
    for (void* p : blocks) troupe::pool_deallocate(p, block);
  }}.join();  // the thread ends: what it kept goes to the depot
}

}  // namespace

TEST(pool, blocks_freed_on_one_thread_are_reused_on_another_each_once) {
  // An odd count: the freeing thread spills full batches and keeps a remainder
  // that it hands over when it ends, a chain of another length.
  const std::size_t n = 10'001;
  auto first = allocate_on_a_thread(n);
  free_on_a_thread(first);
  const auto second = allocate_on_a_thread(2 * n, true);
  std::unordered_set<void*> live{second.begin(), second.end()};
  EXPECT_EQ(live.size(), second.size()) << "a block was handed out twice";
#if !defined(__SANITIZE_ADDRESS__)  // the pool hands everything to operator new there
  const std::unordered_set<void*> old{first.begin(), first.end()};
  const auto reused = std::count_if(second.begin(), second.end(), [&](void* p) { return old.contains(p); });
  EXPECT_EQ(static_cast<std::size_t>(reused), n) << "every block of the first thread should come back from the depot";
#endif
}

TEST(pool, blocks_crossing_threads_keep_their_contents) {
  // A producer allocates and fills, a consumer checks and frees: the depot
  // moves blocks back to the producer all along (as messages do).
  constexpr std::size_t n = 200'000;
  std::atomic<std::size_t> written{0};
  std::vector<std::uint64_t*> slots(n, nullptr);
  std::size_t bad = 0;
  std::thread consumer{[&] {
    for (std::size_t i = 0; i < n; ++i) {
      while (written.load(std::memory_order_acquire) <= i) std::this_thread::yield();
      auto* p = slots[i];
      for (std::size_t w = 0; w < block / sizeof(std::uint64_t); ++w)
        if (p[w] != i) ++bad;
      troupe::pool_deallocate(p, block);
    }
  }};
  for (std::size_t i = 0; i < n; ++i) {
    auto* p = static_cast<std::uint64_t*>(troupe::pool_allocate(block));
    std::fill(p, p + block / sizeof(std::uint64_t), i);
    slots[i] = p;
    written.store(i + 1, std::memory_order_release);
  }
  consumer.join();
  EXPECT_EQ(bad, 0u);
}
