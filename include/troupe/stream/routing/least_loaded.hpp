// least_loaded.hpp: routing to the replica with the fewest queued elements.
//   troupe::farm{worker{}, 4, troupe::least_loaded{}}
// The queue lengths are the producer's view of its own channels into each
// replica: with several upstream replicas each balances its own share.
// Suits elements of uneven cost; round robin is cheaper for even work.
// Cost: one look at each replica's channel per element.
#pragma once

#include <cstddef>
#include <cstdint>

namespace troupe {

class least_loaded {
 public:
  /// `queued(i)`: elements waiting for replica i.
  template <class T, class Queued>
  std::size_t pick(const T&, std::size_t n, Queued&& queued) const {
    std::size_t best = 0, best_size = SIZE_MAX;
    for (std::size_t i = 0; i < n; ++i)
      if (const std::size_t s = queued(i); s < best_size) best = i, best_size = s;
    return best;
  }
};

}  // namespace troupe
