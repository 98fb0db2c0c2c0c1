// matmul: C = A * B for square N x N matrices of floats, row-major (the
// OpenCL benchmark of the libcppa slides). Every implementation computes C
// with the same arithmetic, the triple loop in the order i, k, j: each
// element of C sums a[i][k] * b[k][j] over k = 0 .. N-1 in order (so every
// result is bit-identical), and the innermost loop runs along rows, which
// compilers (g++ for the CPU impls, PoCL for the kernel) vectorise.
//
// params:
//   n        matrix size (quick 256, full 1'000)
//   workers  threads that compute in the CPU implementations (2)
//   blocks   row blocks of the actor implementations (8; block k holds rows
//            n*k/blocks .. n*(k+1)/blocks)
// impls:
//   seq            one thread, the triple loop (i, k, j), no runtime
//   troupe_actors  one troupe event actor per row block (2 workers) reading
//                  A and B in shared memory; the main thread's scoped actor
//                  sends each a start message and gathers the replies (the
//                  block's rows of C, a std::vector<float>) into C
//   troupe_map     troupe::map over the row indices (partition::dynamic(4)),
//                  each element mapped to its row of C (a std::vector<float>);
//                  called from the main thread, which takes part, on a system
//                  of workers - 1 workers (so `workers` threads compute); the
//                  rows are then copied into C
//   troupe_opencl  one troupe::opencl kernel actor: in<float>, in<float>,
//                  out<float>, nd_range {N} in groups of group_rows(N) rows,
//                  the kernel below (one work item per row of C);
//                  one request carries A and B (moved into it), the reply C
//   opencl_bare    the same kernel through the OpenCL C++ bindings alone:
//                  create three buffers, write A and B, enqueue the kernel
//                  (the same range and groups), read C,
//                  wait: the floor of troupe_opencl
//   caf            CAF 0.17: one event-based actor per row block (scheduler
//                  with `workers` threads), a scoped actor sends each a start
//                  message and gathers the blocks, as troupe_actors
// Both OpenCL implementations launch the kernel once outside the measured
// region first (PoCL compiles a kernel for its work-group size at its first
// launch); troupe_opencl does that through a second kernel actor, so the
// measured actor starts with no buffers, as opencl_bare creates its own.
// Program builds, actor spawns and input generation are outside the
// measured region.
// Measured region: from the first message (request, enqueue) to C complete
// in host memory (gathered, for the actor implementations).
// Figure: wall_s (lower is better); the ratio troupe_opencl / opencl_bare is
// the kernel actor's overhead for one large request.
// Check: C against seq's result, recomputed after the measured region with
// the same float arithmetic (loop order i, k, j: the same sum per element):
// the largest absolute difference must stay below 1e-4 times the largest
// |C| (the device may contract a*b+c into fma, and seq does not); a wrong
// result is off by O(1) of that scale. The message names both errors.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/harness.hpp"

namespace bench {

sample run_seq(const params& p);
sample run_troupe_actors(const params& p);
sample run_troupe_map(const params& p);
sample run_troupe_opencl(const params& p);
sample run_opencl_bare(const params& p);
sample run_caf(const params& p);

namespace matmul {

/// The kernel of both OpenCL implementations: one work item per row of C
/// (N is the global size), the same loop as multiply_rows: i, k, j, so the
/// innermost loop reads a row of B and writes a row of C, which PoCL
/// vectorises, as the compiler does multiply_rows.
inline constexpr const char* kernel_source = R"CL(
__kernel void matmul(__global const float* restrict a, __global const float* restrict b,
                     __global float* restrict c) {
  const size_t i = get_global_id(0), n = get_global_size(0);
  __global float* ci = c + i * n;
  for (size_t j = 0; j < n; ++j) ci[j] = 0.0f;
  for (size_t k = 0; k < n; ++k) {
    const float aik = a[i * n + k];
    __global const float* bk = b + k * n;
    for (size_t j = 0; j < n; ++j) ci[j] += aik * bk[j];
  }
}
)CL";

/// The work-group size of the kernel: 8 rows when it divides n (PoCL runs
/// each group's rows as one vectorised loop; 2-4x faster here than the
/// size it picks itself), else the largest of 4, 2, 1 that does.
inline std::size_t group_rows(std::size_t n) {
  for (std::size_t g : {8, 4, 2}) {
    if (n % g == 0) return g;
  }
  return 1;
}
/// An n x n matrix of values in [-1, 1), multiples of 2^-15 (exact in
/// float), from a multiplicative hash of the index and `seed`.
inline std::vector<float> matrix(std::int64_t n, std::uint32_t seed) {
  std::vector<float> m(static_cast<std::size_t>(n * n));
  for (std::size_t i = 0; i < m.size(); ++i) {
    const std::uint32_t h = (static_cast<std::uint32_t>(i) + seed) * 2654435761U;
    m[i] = static_cast<float>(h >> 16) / 32768.0F - 1.0F;
  }
  return m;
}
inline std::vector<float> a(std::int64_t n) { return matrix(n, 1); }
inline std::vector<float> b(std::int64_t n) { return matrix(n, 7919); }

/// Rows r0 .. r1 of a * b (n x n), the triple loop in the order i, k, j
/// (the innermost loop runs along a row of B and of C: the compiler
/// vectorises it), into out[0 .. (r1 - r0) * n).
inline void multiply_rows(const float* a, const float* b, float* out, std::size_t n, std::size_t r0, std::size_t r1) {
  for (std::size_t i = r0; i < r1; ++i) {
    float* row = out + (i - r0) * n;
    for (std::size_t j = 0; j < n; ++j) row[j] = 0.0F;
    for (std::size_t k = 0; k < n; ++k) {
      const float aik = a[i * n + k];
      const float* brow = b + k * n;
      for (std::size_t j = 0; j < n; ++j) row[j] += aik * brow[j];
    }
  }
}

/// Block k of `blocks` row blocks of an n-row matrix: its first row and the
/// one past its last.
inline std::size_t block_begin(std::int64_t n, std::int64_t blocks, std::int64_t k) {
  return static_cast<std::size_t>(n * k / blocks);
}

/// Checks c against seq's result (see the top of this file).
inline void check_product(const std::vector<float>& c, std::int64_t n) {
  const auto un = static_cast<std::size_t>(n);
  check_eq("elements of C", n * n, static_cast<std::int64_t>(c.size()));
  const auto av = a(n), bv = b(n);
  std::vector<float> want(un * un);
  multiply_rows(av.data(), bv.data(), want.data(), un, 0, un);
  double diff = 0, scale = 0;
  std::size_t worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(static_cast<double>(c[i]) - static_cast<double>(want[i]));
    if (d > diff || std::isnan(d)) {
      diff = std::isnan(d) ? HUGE_VAL : d;
      worst = i;
    }
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  check(diff <= 1e-4 * scale, "C differs from seq's result: largest absolute error " + std::to_string(diff) +
                                  " at row " + std::to_string(worst / un) + ", column " + std::to_string(worst % un) +
                                  " (got " + std::to_string(c[worst]) + ", want " + std::to_string(want[worst]) +
                                  "), relative to the largest |C| " + std::to_string(scale) + ": " +
                                  std::to_string(diff / scale) + " > 1e-4");
}

}  // namespace matmul
}  // namespace bench
