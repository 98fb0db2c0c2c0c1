// kernel_round_trip: the latency of one small request to a kernel actor. A
// client asks for c = a + b over `elements` floats and sends the next request
// only when it has the answer (one request in flight), `round_trips` times.
//
// params:
//   round_trips  measured round trips (quick 10'000, full 100'000), after
//                `warmup` (200) that are not measured (the first launch
//                compiles the kernel; buffers and queues get set up)
//   elements     floats per vector (1'024)
//   workers      workers of the troupe actor system (1 or 2)
//   relaxed      1: the troupe actor system's polling is relaxed (an idle
//                worker spins ~5 us, then sleeps) instead of the default
//                moderate (up to ~50 us): with PoCL the device's threads
//                share the cores with the workers
// Variants: 1 worker, 2 workers, 1 worker relaxed (opencl_bare has no
// workers: the same run in each).
// impls:
//   troupe_opencl         a troupe::opencl kernel actor (in<float>, in<float>,
//                         out<float>, nd_range {elements}); the client is an
//                         event actor that sends the next request from the
//                         previous one's then()
//   troupe_opencl_scoped  the same kernel actor; the client is the main
//                         thread's scoped_actor (request(...).receive(...))
//   opencl_bare           the OpenCL C++ bindings alone, the same buffers for
//                         every round trip: write a, write b, enqueue the
//                         kernel, read c, wait for the read
//                         (cl::Event::wait, i.e. clWaitForEvents)
//   opencl_bare_callback  the same, but the host learns of the read's end
//                         from a completion callback (clSetEventCallback)
//                         that wakes it through a condition variable (how
//                         the kernel actor learns of it)
//   troupe_cpu_actor      the same add in a plain troupe event actor (the
//                         request carries both vectors, the reply the sum);
//                         the client as in troupe_opencl
// Every request carries fresh copies of a and b (a request's vectors are
// moved into the actor; opencl_bare writes the same host arrays again), with
// a[0] = the round trip's number, so each answer is distinct.
// Measured region: from the first measured request to the last answer.
// Figures: round_trips_per_s = round_trips / wall_s; extra p50_us and p99_us,
// percentiles (nearest rank) of the single round trips (steady_clock read
// after every answer: the time since the previous one).
// Check: every answer's c[0] is its round trip's number plus b[0], and c[i] =
// a[i] + b[i] at 8 more positions; the last answer in full (all values are
// small integers and halves: exact in float).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/harness.hpp"

namespace bench {

sample run_troupe_opencl(const params& p);
sample run_troupe_opencl_scoped(const params& p);
sample run_opencl_bare(const params& p);
sample run_opencl_bare_callback(const params& p);
sample run_troupe_cpu_actor(const params& p);

namespace kernel_round_trip {

inline constexpr const char* kernel_source = R"CL(
__kernel void vadd(__global const float* a, __global const float* b, __global float* c) {
  const size_t i = get_global_id(0);
  c[i] = a[i] + b[i];
}
)CL";

inline std::vector<float> a(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return v;
}
inline std::vector<float> b(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.5F * static_cast<float>(i) + 3.0F;
  return v;
}
/// The first input of round trip `r`: a with a[0] = r.
inline std::vector<float> a_for(const std::vector<float>& a, std::int64_t r) {
  auto v = a;
  v[0] = static_cast<float>(r);
  return v;
}

/// Checks the answer to round trip r (see the top of this file); `full`:
/// every element.
inline void check_answer(const std::vector<float>& c, const std::vector<float>& a, const std::vector<float>& b,
                         std::int64_t r, bool full) {
  auto bad = [&](std::size_t i) {
    const float want = (i == 0 ? static_cast<float>(r) : a[i]) + b[i];
    return c[i] != want;
  };
  check_eq("elements in answer " + std::to_string(r), static_cast<std::int64_t>(a.size()),
           static_cast<std::int64_t>(c.size()));
  const std::size_t step = full ? 1 : std::max<std::size_t>(1, c.size() / 8);
  for (std::size_t i = 0; i < c.size(); i += step)
    check(!bad(i), "answer " + std::to_string(r) + ": c[" + std::to_string(i) + "] = " + std::to_string(c[i]));
  check(!bad(c.size() - 1), "answer " + std::to_string(r) + ": wrong last element");
}

inline std::int64_t since_ns(std::chrono::steady_clock::time_point t0, std::chrono::steady_clock::time_point t1) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
}

}  // namespace kernel_round_trip
}  // namespace bench
