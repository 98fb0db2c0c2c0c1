// map.hpp: the map pattern, data-parallel over a collection in shared memory.
//   std::vector<double> out = troupe::map(sys, std::span<const int>{in}, [](int x) { return x * 0.5; });
//   troupe::map(sys, in, f, troupe::partition::fixed());         // one chunk per worker
//   troupe::map(sys, in, f, troupe::partition::dynamic(256));    // chunks of 256, taken on demand
// The input is read in place (no copy); each chunk writes its own slice of
// the output. Static partitioning suits uniform work; dynamic partitioning
// (workers take the next chunk from a shared counter) balances irregular work.
// Call it from main (blocks) or from an actor (its worker takes part).
// The result type must be default-constructible. An exception in `f` stops
// the remaining chunks and reaches the caller.
// Cost: one task per worker, one atomic fetch_add per dynamic chunk.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <span>
#include <type_traits>
#include <vector>

#include "troupe/pattern/task_group.hpp"

namespace troupe {

class partition {
 public:
  /// One contiguous chunk per worker (and one for the caller).
  static partition fixed() noexcept { return partition{0}; }
  /// Chunks of `chunk` elements handed out on demand.
  static partition dynamic(std::size_t chunk = 64) noexcept { return partition{chunk == 0 ? 1 : chunk}; }

  bool is_dynamic() const noexcept { return chunk_ != 0; }
  std::size_t chunk() const noexcept { return chunk_; }

 private:
  explicit partition(std::size_t c) noexcept : chunk_{c} {}
  std::size_t chunk_;
};

/// Applies `f` to every element of `in` in parallel; returns the results in
/// input order.
template <class T, class F>
auto map(actor_system& sys, std::span<const T> in, F f, partition part = partition::dynamic()) {
  using U = std::decay_t<std::invoke_result_t<F&, const T&>>;
  static_assert(std::is_default_constructible_v<U>, "map: the result type must be default-constructible");
  std::vector<U> out(in.size());
  const std::size_t n = in.size();
  if (n == 0) return out;
  const std::size_t pieces = std::min<std::size_t>(sys.worker_count() + 1, n);
  // Everything the tasks touch lives longer than the group (declared first).
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> next{0};
  const std::size_t chunk = part.chunk();
  auto run_range = [&](std::size_t begin, std::size_t end) {
    try {
      for (std::size_t i = begin; i < end && !stop.load(std::memory_order_relaxed); ++i) out[i] = f(in[i]);
    } catch (...) {
      stop.store(true, std::memory_order_relaxed);
      throw;
    }
  };
  auto dynamic_work = [&] {
    for (std::size_t i; !stop.load(std::memory_order_relaxed) && (i = next.fetch_add(chunk)) < n;)
      run_range(i, std::min(n, i + chunk));
  };
  auto fixed_work = [&](std::size_t k) { run_range(n * k / pieces, n * (k + 1) / pieces); };
  task_group g{sys};
  for (std::size_t k = 1; k < pieces; ++k) {
    if (part.is_dynamic()) g.run(dynamic_work);
    else g.run([&fixed_work, k] { fixed_work(k); });
  }
  if (part.is_dynamic()) dynamic_work();
  else fixed_work(0);
  g.wait();
  return out;
}

/// Convenience overload for vectors.
template <class T, class F>
auto map(actor_system& sys, const std::vector<T>& in, F f, partition part = partition::dynamic()) {
  return map(sys, std::span<const T>{in}, std::move(f), part);
}

}  // namespace troupe
