// dac_sort: sorting `n` random 32-bit integers (seeded, the same input for
// every implementation).
//
// params:
//   n         number of integers (10'000'000)
//   cutoff    troupe, caf: sub-arrays at or below this size are sorted
//             sequentially (std::sort); n / (4 x workers), see main.cpp
//   workers   threads used by the parallel implementations (2)
// Measured region: the sort only (the input is generated before).
// Figure: wall_s. The table's ratio against std_sort is the speedup.
// Check: the output is sorted and is a permutation of the input (same sum
// and same xor of all elements).
// impls: troupe (divide & conquer merge sort as fork/join tasks on the
// actor system's scheduler, merging with troupe::parallel_merge into a buffer
// and back, a level each), troupe_seq_merge (the same with a sequential
// std::inplace_merge per combine), std_sort (std::sort, one thread), tbb
// (tbb::parallel_sort limited to `workers` threads), caf (CAF 0.17, one
// actor per sub-problem above the cut-off).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_troupe_seq_merge(const params& p);
sample run_std_sort(const params& p);
sample run_tbb(const params& p);
sample run_caf(const params& p);

namespace dac_sort {

inline std::vector<std::int32_t> input(std::int64_t n) {
  std::mt19937 rng{20261121};
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<std::int32_t>(rng());
  return v;
}

struct fingerprint {
  std::int64_t sum = 0;
  std::uint32_t xors = 0;
};

inline fingerprint fingerprint_of(const std::vector<std::int32_t>& v) {
  fingerprint f;
  for (auto x : v) {
    f.sum += x;
    f.xors ^= static_cast<std::uint32_t>(x);
  }
  return f;
}

inline void check_sorted(const std::vector<std::int32_t>& v, const fingerprint& before) {
  for (std::size_t i = 1; i < v.size(); ++i) check(v[i - 1] <= v[i], "not sorted at index " + std::to_string(i));
  auto after = fingerprint_of(v);
  check(after.sum == before.sum && after.xors == before.xors, "the output is not a permutation of the input");
}

}  // namespace dac_sort
}  // namespace bench
