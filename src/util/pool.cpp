// Size-class pool: per-thread free lists, batches exchanged with a global depot.
#include "troupe/util/pool.hpp"

#include <array>
#include <mutex>
#include <new>
#include <vector>

namespace troupe {
namespace {

constexpr std::size_t class_count = 5;  // 32, 64, 128, 256, 512 bytes
constexpr std::size_t batch = 128;      // blocks moved to/from the depot at once
constexpr std::size_t local_limit = 2 * batch;

struct free_block {
  free_block* next;
};

constexpr std::size_t class_of(std::size_t size) noexcept {
  if (size <= 32) return 0;
  if (size <= 64) return 1;
  if (size <= 128) return 2;
  if (size <= 256) return 3;
  return 4;
}

constexpr std::size_t class_size(std::size_t c) noexcept { return std::size_t{32} << c; }

// A chain of `batch` blocks linked through free_block::next.
struct depot {
  std::mutex mtx;
  std::array<std::vector<free_block*>, class_count> chains;
};

depot& the_depot() {
  // Never destroyed: threads may free blocks during static destruction.
  static depot* d = new depot;
  return *d;
}

// Trivially constructible, so that thread_local access needs no guard call
// on the hot path; the flusher below hands blocks back at thread exit.
struct local_cache {
  free_block* head[class_count];
  std::size_t count[class_count];
};

thread_local local_cache cache{};

struct cache_flusher {
  bool armed = false;
  ~cache_flusher() {
    // Hand everything back so other threads can reuse it.
    auto& d = the_depot();
    std::lock_guard<std::mutex> guard{d.mtx};
    for (std::size_t c = 0; c < class_count; ++c)
      if (cache.head[c] != nullptr) {
        d.chains[c].push_back(cache.head[c]);
        cache.head[c] = nullptr;
        cache.count[c] = 0;
      }
  }
};

thread_local cache_flusher flusher;

void* refill(std::size_t c) {
  flusher.armed = true;  // first use of the flusher registers its destructor
  auto& d = the_depot();
  {
    std::lock_guard<std::mutex> guard{d.mtx};
    if (!d.chains[c].empty()) {
      free_block* chain = d.chains[c].back();
      d.chains[c].pop_back();
      std::size_t n = 0;
      for (auto* b = chain; b != nullptr; b = b->next) ++n;
      cache.head[c] = chain->next;
      cache.count[c] = n - 1;
      return chain;
    }
  }
  return ::operator new(class_size(c));
}

void spill(std::size_t c) {
  flusher.armed = true;
  // Detach `batch` blocks from the local list and give them to the depot.
  free_block* first = cache.head[c];
  free_block* last = first;
  for (std::size_t i = 1; i < batch; ++i) last = last->next;
  cache.head[c] = last->next;
  cache.count[c] -= batch;
  last->next = nullptr;
  auto& d = the_depot();
  std::lock_guard<std::mutex> guard{d.mtx};
  d.chains[c].push_back(first);
}

}  // namespace

#if defined(__SANITIZE_ADDRESS__)
// Under AddressSanitizer every block goes to the real allocator, so that a
// use-after-free of a message is reported instead of hidden by recycling.
void* pool_allocate(std::size_t size) { return ::operator new(size); }
void pool_deallocate(void* p, std::size_t) noexcept { ::operator delete(p); }
[[maybe_unused]] void keep_pool_compiled() { (void)&refill; (void)&spill; }
#else
void* pool_allocate(std::size_t size) {
  if (size > pool_max_size) return ::operator new(size);
  auto c = class_of(size);
  if (free_block* b = cache.head[c]) {
    cache.head[c] = b->next;
    --cache.count[c];
    return b;
  }
  return refill(c);
}

void pool_deallocate(void* p, std::size_t size) noexcept {
  if (size > pool_max_size) {
    ::operator delete(p);
    return;
  }
  auto c = class_of(size);
  auto* b = static_cast<free_block*>(p);
  b->next = cache.head[c];
  cache.head[c] = b;
  if (++cache.count[c] > local_limit) spill(c);
}
#endif

}  // namespace troupe
