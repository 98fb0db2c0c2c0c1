// opencl_stream: a stream pipeline with a device stage. A source of floats,
// troupe::opencl::device_map (the elements go to the device in batches, the
// results come back in input order), a sink that counts and sums; then the
// same with a farm of two device stages sharing the device.
// Prints a message and exits 0 when there is no OpenCL device.
#include <troupe/opencl.hpp>
#include <troupe/troupe.hpp>

#include <cstdint>
#include <cstdio>
#include <optional>

namespace st = troupe::stream;
namespace ocl = troupe::opencl;

// [ocl_stream_source]
// A device_map kernel: (const In*, Out*, uint n), one output per input. The
// global size may be rounded up past n, so the kernel checks i < n.
constexpr const char* source = R"CL(
__kernel void affine(__global const float* in, __global float* out, uint n) {
  size_t i = get_global_id(0);
  if (i < n) out[i] = 2.0f * in[i] + 1.0f;
}
)CL";
// [/ocl_stream_source]

namespace {
constexpr std::uint64_t count = 1'000'000;
// 2 i + 1 for i < count: each value is exact in float, the sum exact in double.
constexpr double expected_sum = static_cast<double>(count) * static_cast<double>(count);
}  // namespace

int main() {
  if (ocl::devices().empty()) {
    std::printf("no OpenCL device found: skipped (scripts/setup installs PoCL)\n");
    return 0;
  }
  const auto prog = ocl::program::build(ocl::default_device(), source);
  std::printf("device: %s; %llu elements\n", prog.dev().info().name.c_str(), static_cast<unsigned long long>(count));
  troupe::actor_system sys;
  bool ok = true;

  {
    // [ocl_stream_pipeline]
    std::uint64_t seen = 0, out_of_order = 0;
    double sum = 0;
    auto g = troupe::spawn_pattern(
        sys, troupe::pipeline{st::source([i = std::uint64_t{0}]() mutable -> std::optional<float> {
                                if (i == count) return std::nullopt;
                                return static_cast<float>(i++);
                              }),
                              // Batches of up to 16384 elements, work groups of 64 work items.
                              ocl::device_map<float, float>(prog, "affine", {.size = 16384, .local = 64}),
                              st::sink([&](float y) {
                                out_of_order += y != static_cast<float>(2 * seen + 1);  // input order is kept
                                ++seen;
                                sum += y;
                              })});
    g.wait();  // rethrows an opencl_error from the device stage
    // [/ocl_stream_pipeline]
    std::printf("pipeline: %llu results, sum %.0f, %llu out of order: %s\n", static_cast<unsigned long long>(seen), sum,
                static_cast<unsigned long long>(out_of_order),
                seen == count && sum == expected_sum && out_of_order == 0 ? "correct" : "WRONG");
    ok = ok && seen == count && sum == expected_sum && out_of_order == 0;
  }

  {
    // [ocl_stream_farm]
    // Two replicas, each with its own queue and buffers, on the same device.
    // Each replica keeps its own order; the sink sees their outputs interleaved.
    std::uint64_t seen = 0;
    double sum = 0;
    auto g = troupe::spawn_pattern(
        sys, troupe::pipeline{st::source([i = std::uint64_t{0}]() mutable -> std::optional<float> {
                                if (i == count) return std::nullopt;
                                return static_cast<float>(i++);
                              }),
                              troupe::farm{ocl::device_map<float, float>(prog, "affine", {.size = 8192}), 2},
                              st::sink([&](float y) {
                                ++seen;
                                sum += y;
                              })});
    g.wait();
    // [/ocl_stream_farm]
    std::printf("farm of 2 device stages: %llu results, sum %.0f: %s\n", static_cast<unsigned long long>(seen), sum,
                seen == count && sum == expected_sum ? "correct" : "WRONG");
    ok = ok && seen == count && sum == expected_sum;
  }
  return ok ? 0 : 1;
}
