// mixed_case: message passing, actor creation and a long computation at once.
// Each of `rounds` rounds (re)creates `rings` rings of `ring_size` actors and
// starts one factorisation of `semiprime` (trial division, in an actor of its
// own, while the rings run). Each ring's token is forwarded `hops` times from
// member to member; the member that receives it with hop count == hops reports
// the ring as done. A round ends when all rings are done and the factorisation
// is back; the next round spawns new rings (the old ones terminate).
//
// params:
//   rings, ring_size, hops, rounds   (20, 50, 1'000, 5)
//   semiprime, factor_p, factor_q    semiprime = factor_p * factor_q, both prime
//       quick: 72'057'579'542'413'141 = 268'435'399 * 268'435'459 (~2^56)
//       full:  1'152'921'470'247'108'503 = 1'073'741'789 * 1'073'741'827 (~2^60)
//   workers                          scheduler worker threads (2)
// Measured region: all rounds, from the first spawn to the last round's end.
// Figure: wall_s.
// Check: every ring of every round reported exactly `hops` hops, and every
// factorisation returned (factor_p, factor_q).
// All implementations must use bench::mixed_case::factorise below.
#pragma once

#include <cstdint>
#include <utility>

#include "common/harness.hpp"

namespace bench {

namespace mixed_case {

/// Smallest prime factor p of n (by trial division) and n / p.
inline std::pair<std::uint64_t, std::uint64_t> factorise(std::uint64_t n) {
  if (n < 4) return {n, 1};
  if (n % 2 == 0) return {2, n / 2};
  for (std::uint64_t d = 3; d <= n / d; d += 2)
    if (n % d == 0) return {d, n / d};
  return {n, 1};
}

}  // namespace mixed_case

sample run_troupe(const params& p);
sample run_caf(const params& p);

}  // namespace bench
