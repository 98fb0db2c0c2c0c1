// Size-class pool: per-thread free lists (inlined in pool.hpp), batches
// exchanged with a global depot under a mutex.
#include "troupe/detail/pool.hpp"

#include <array>
#include <mutex>
#include <vector>

namespace troupe::detail {

thread_local constinit pool_cache pool_tls{{}, {pool_unarmed, pool_unarmed, pool_unarmed, pool_unarmed, pool_unarmed}};
static_assert(pool_classes == 5, "pool_tls's initialiser lists one count per class");

namespace {

constexpr std::size_t batch = pool_local_limit / 2;  // blocks moved to/from the depot at once

constexpr std::size_t class_size(std::size_t c) noexcept { return std::size_t{32} << c; }

// A chain of blocks linked through pool_block::next, with its length. The
// length is kept rather than counted on refill: the blocks were last written
// by the thread that spilled them, often on another core, and counting them
// walked 128 cache misses in sequence (fan_out: 28% of its time in
// pool_refill; see docs/performance.md, "The pool's depot").
struct chain {
  pool_block* first;
  std::size_t length;
};
struct depot {
  std::mutex mtx;
  std::array<std::vector<chain>, pool_classes> chains;
};

depot& the_depot() {
  // Never destroyed: threads may free blocks during static destruction.
  static depot* d = new depot;
  return *d;
}

// Hands a thread's blocks back to the depot when the thread ends.
struct cache_flusher {
  bool armed = false;
  ~cache_flusher() {
    auto& d = the_depot();
    std::lock_guard<std::mutex> guard{d.mtx};
    for (std::size_t c = 0; c < pool_classes; ++c)
      if (pool_tls.head[c] != nullptr) {
        d.chains[c].push_back(chain{pool_tls.head[c], pool_tls.count[c]});
        pool_tls.head[c] = nullptr;
        pool_tls.count[c] = 0;
      }
  }
};

thread_local cache_flusher flusher;

// The thread's first trip here: registers the flusher's destructor and
// replaces the `unarmed` counts by the true ones (the lists are empty but for
// the one block a first free has just pushed, which pool_spill counts).
void arm() noexcept {
  if (flusher.armed) return;
  flusher.armed = true;
  for (std::size_t c = 0; c < pool_classes; ++c) pool_tls.count[c] = 0;
}

}  // namespace

void* pool_refill(std::size_t c) {
  arm();
  auto& d = the_depot();
  {
    std::lock_guard<std::mutex> guard{d.mtx};
    if (!d.chains[c].empty()) {
      const chain got = d.chains[c].back();
      d.chains[c].pop_back();
      pool_tls.head[c] = got.first->next;
      pool_tls.count[c] = got.length - 1;
      return got.first;
    }
  }
  return ::operator new(class_size(c));
}

void pool_spill(std::size_t c) noexcept {
  if (!flusher.armed) {
    // A first free: one block on the list, nothing to spill yet.
    arm();
    pool_tls.count[c] = 1;
    return;
  }
  // Detach `batch` blocks from the local list and give them to the depot.
  pool_block* first = pool_tls.head[c];
  pool_block* last = first;
  for (std::size_t i = 1; i < batch; ++i) last = last->next;
  pool_tls.head[c] = last->next;
  pool_tls.count[c] -= batch;
  last->next = nullptr;
  auto& d = the_depot();
  std::lock_guard<std::mutex> guard{d.mtx};
  try {
    d.chains[c].push_back(chain{first, batch});
  } catch (...) {
    // Out of memory for the depot's list: keep the blocks local instead.
    last->next = pool_tls.head[c];
    pool_tls.head[c] = first;
    pool_tls.count[c] += batch;
  }
}

}  // namespace troupe::detail
