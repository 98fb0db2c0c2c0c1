// The synthetic per-element work of the map benchmarks (map_rows,
// latency_chains): a dependent chain of `spin` multiply-adds, about 1.6 ns
// each on the reference machine; deterministic, so results can be checked.
#pragma once

#include <cstdint>

namespace bench {

inline double synthetic_work(double x, std::int64_t spin) {
  double y = x;
  for (std::int64_t i = 0; i < spin; ++i) y = y * 0.999999 + 1e-7;
  return y;
}

}  // namespace bench
