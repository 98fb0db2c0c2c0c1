// map_rows (PDP 2019 "Map accelerator" benchmark, scaled to 2 cores): a
// matrix of `rows` x `cols` doubles; an actor maps every row with a synthetic
// function of about 2 us per element, then reduces the row (sum) itself,
// row after row.
//
// params:
//   rows, cols     matrix shape (100 x 5'000; ~1 s of sequential work)
//   spin           iterations of the synthetic function (1'500, ~2 us)
//   map_workers    threads that do the map (1 or 2)
// impls:
//   troupe_seq  the actor maps each row itself (the paper's sequential actor)
//   troupe      the actor asks a map accelerator with `map_workers` team threads
//   caf         CAF 0.17 scatter/gather: the actor splits each row into
//               `map_workers` chunks for as many worker actors and gathers the
//               mapped chunks (CAF scheduler: map_workers + 1 threads)
// Measured region: all rows, from the first row sent to the last sum.
// Figure: wall_s; the table's ratio against troupe_seq is the speedup.
// Check: the sums of rows 0, 1 and rows-1 equal a sequential recomputation
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/harness.hpp"
#include "common/synthetic.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_troupe_seq(const params& p);
sample run_caf(const params& p);

namespace map_rows {

inline std::vector<double> row(std::int64_t r, std::int64_t cols) {
  std::vector<double> v(static_cast<std::size_t>(cols));
  for (std::int64_t c = 0; c < cols; ++c) v[static_cast<std::size_t>(c)] = static_cast<double>(r * cols + c) * 1e-6;
  return v;
}

inline double reference_sum(std::int64_t r, std::int64_t cols, std::int64_t spin) {
  double s = 0;
  for (double x : row(r, cols)) s += synthetic_work(x, spin);
  return s;
}

/// Checks the per-row sums against a sequential recomputation of three rows.
inline void check_sums(const std::vector<double>& sums, const params& p) {
  const auto rows = p.get("rows"), cols = p.get("cols"), spin = p.get("spin");
  check_eq("rows reduced", rows, static_cast<std::int64_t>(sums.size()));
  for (std::int64_t r : {std::int64_t{0}, std::int64_t{1}, rows - 1}) {
    double expected = reference_sum(r, cols, spin);
    check(sums[static_cast<std::size_t>(r)] == expected,
          "row " + std::to_string(r) + " sum differs from the sequential result");
  }
}

}  // namespace map_rows
}  // namespace bench
