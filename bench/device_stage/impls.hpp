// device_stage: a stream stage on the OpenCL device against the same work on
// the CPU. Source -> stage -> Sink over `elements` floats; the stage applies
// a per-element function of a few dozen flops (a degree-16 polynomial by
// Horner's rule, 32 flops, then a square root and an exponential).
//
// params:
//   elements  floats the source emits (quick 2'000'000, full 20'000'000);
//             element i is (i mod 4096) / 4096
//   batch     device_map's batch size (256 or 4'096, the variants)
//   workers   workers of the troupe actor system (2; 1 in the "1 worker"
//             variants)
//   replicas  replicas of the CPU farm (2)
// impls:
//   troupe_opencl    pipeline{source, troupe::opencl::device_map<float,
//                    float>(prog, "work", {.size = batch}), sink}: the stage
//                    sends a batch to the device when it is full (or on the
//                    stage's own flush rules, see device_map.hpp; its other
//                    options are the defaults)
//   troupe_cpu_farm  pipeline{source, farm{cpu stage, replicas}, sink}: the
//                    same function on the CPU, one element at a time (batch
//                    is not used: the same run in both variants)
// Both run on a pool of `workers` workers with channels of 1024 slots
// (common/stream_graph.hpp); with PoCL the device's threads share the same
// two cores. Each implementation first runs its graph over 4 * batch +
// (elements mod batch) elements (not measured, checked): PoCL compiles a
// kernel for a work-group size at its first launch with it.
// Measured region: from the spawn of the graph until it has ended (every
// element through the sink).
// Figure: tuples_per_s = elements / wall_s.
// Check: the sink counts `elements` outputs, and their sum (in double) is
// within 1e-5 (relative) of the sum of the function computed on the CPU
// (the device may contract multiply-adds and round sqrt and exp a few ulp
// differently): both implementations match the same reference, and so each
// other.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/harness.hpp"

namespace bench {

sample run_troupe_opencl(const params& p);
sample run_troupe_cpu_farm(const params& p);

namespace device_stage {

/// Inputs repeat with this period.
inline constexpr std::int64_t period = 4096;

inline float input(std::int64_t i) { return static_cast<float>(i % period) / static_cast<float>(period); }

/// The polynomial's coefficients, highest degree first: (-1)^k / (k + 1) for
/// degree k (the series of ln(1 + x) / x: well conditioned on [0, 1)).
inline constexpr std::array<float, 17> coefficients = [] {
  std::array<float, 17> c{};
  for (int k = 16; k >= 0; --k)
    c[static_cast<std::size_t>(16 - k)] = (k % 2 == 0 ? 1.0F : -1.0F) / static_cast<float>(k + 1);
  return c;
}();

/// The per-element function on the CPU.
inline float work(float x) {
  float p = 0.0F;
  for (float c : coefficients) p = p * x + c;
  return std::sqrt(p * p + 1.0F) + std::exp(-x);
}

/// The same function as a device_map kernel, its coefficients printed as
/// exact hexadecimal float literals.
inline std::string kernel_source() {
  std::string coef;
  for (float c : coefficients) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%af", coef.empty() ? "" : ", ", static_cast<double>(c));
    coef += buf;
  }
  return "__constant float coef[" + std::to_string(coefficients.size()) + "] = {" + coef + "};\n" + R"CL(
__kernel void work(__global const float* in, __global float* out, uint n) {
  const size_t i = get_global_id(0);
  if (i >= n) return;
  const float x = in[i];
  float p = 0.0f;
  for (int k = 0; k < 17; ++k) p = p * x + coef[k];
  out[i] = sqrt(p * p + 1.0f) + exp(-x);
}
)CL";
}

/// What the sink saw.
struct tally {
  std::int64_t count = 0;
  double sum = 0;
};

/// Checks the sink's tally (see the top of this file).
inline void check_tally(const tally& t, std::int64_t elements) {
  check_eq("elements at the sink", elements, t.count);
  double per_period = 0, rest = 0;
  for (std::int64_t i = 0; i < period; ++i) {
    const double y = work(input(i));
    per_period += y;
    if (i < elements % period) rest += y;
  }
  const double want = per_period * static_cast<double>(elements / period) + rest;
  const double rel = std::fabs(t.sum - want) / want;
  check(rel <= 1e-5, "sum of the outputs " + std::to_string(t.sum) + ", the CPU reference " + std::to_string(want) +
                         ": relative difference " + std::to_string(rel) + " > 1e-5");
}

}  // namespace device_stage
}  // namespace bench
