// opencl_vector_add: an OpenCL kernel as a typed actor. An event actor asks
// it to add two vectors, and asks a second kernel actor for a dot product:
// the device sums each work group's products in local memory, and the host
// adds the groups' sums (postprocess), so that actor's reply is a double.
// Prints a message and exits 0 when there is no OpenCL device.
// [ocl_include]
#include <troupe/opencl.hpp>  // link troupe::opencl
#include <troupe/troupe.hpp>
// [/ocl_include]

#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace ocl = troupe::opencl;

// [ocl_source]
constexpr const char* source = R"CL(
__kernel void vadd(__global const float* a, __global const float* b, __global float* c) {
  size_t i = get_global_id(0);
  c[i] = a[i] + b[i];
}
// One sum of products per work group (a tree in local memory; the group size is a power of two).
__kernel void dot_groups(__global const float* a, __global const float* b, __global float* sums,
                         __local float* tmp) {
  size_t l = get_local_id(0);
  tmp[l] = a[get_global_id(0)] * b[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {
    if (l < s) tmp[l] += tmp[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) sums[get_group_id(0)] = tmp[0];
}
)CL";
// [/ocl_source]

int main() {
  // [ocl_device]
  if (ocl::devices().empty()) {
    std::printf("no OpenCL device found: skipped (scripts/setup installs PoCL)\n");
    return 0;
  }
  ocl::device dev = ocl::default_device();  // a GPU if there is one, else the first device
  std::printf("device: %s (%s, %s)\n", dev.info().name.c_str(), dev.info().platform.c_str(),
              std::string{ocl::to_string(dev.info().type)}.c_str());
  ocl::program prog;
  try {
    prog = ocl::program::build(dev, source);
  } catch (const ocl::opencl_error& e) {
    std::printf("%s\n%s\n", e.what(), e.build_log().c_str());  // the compiler's messages
    return 1;
  }
  // [/ocl_device]

  constexpr std::size_t n = 1 << 16;
  troupe::actor_system sys{troupe::config{.workers = 2}};
  // [ocl_vadd]
  // typed_actor<std::vector<float>(std::vector<float>, std::vector<float>)>
  auto vadd = ocl::spawn(sys, prog, "vadd", ocl::nd_range{{n}}, ocl::in<float>{}, ocl::in<float>{}, ocl::out<float>{});
  // [/ocl_vadd]
  std::size_t group = 256;  // a power of two the device accepts
  while (group > dev.info().max_work_group_size) group /= 2;
  // [ocl_dot]
  // n work items in groups of `group`; one output per group (a size rule over
  // the launch); `group` floats of local memory; the host adds the groups' sums.
  // typed_actor<double(std::vector<float>, std::vector<float>)>
  auto dot = ocl::spawn(
      sys,
      ocl::kernel(prog, "dot_groups", ocl::nd_range{.global = {n}, .local = {group}})
          .postprocess([](std::vector<float>&& sums) { return std::accumulate(sums.begin(), sums.end(), 0.0); }),
      ocl::in<float>{}, ocl::in<float>{},
      ocl::out<float>{[](const ocl::launch_info& l) { return l.range.work_items() / l.range.local[0]; }},
      ocl::local<float>{group});
  // [/ocl_dot]

  troupe::scoped_actor self{sys};
  auto me = self.handle();
  // [ocl_client]
  sys.spawn([vadd, dot, me](troupe::event_actor& client) {
    std::vector<float> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = static_cast<float>(i % 100);
      b[i] = static_cast<float>(i % 7);
    }
    // The first request copies a and b into its message (they are used again), the
    // second moves them; each request's vectors are then copied to the device.
    client.request(vadd, 10s, a, b)
        .then([&client, me](std::vector<float>& c) { client.send(me, std::move(c)); },
              [&client, me](troupe::error& e) { client.send(me, e.to_string()); });
    client.request(dot, 10s, std::move(a), std::move(b))
        .then([&client, me](double d) { client.send(me, d); },
              [&client, me](troupe::error& e) { client.send(me, e.to_string()); });
  });
  // [/ocl_client]

  std::vector<float> sum;
  double product = -1;
  std::string failure;
  for (int answers = 0; answers < 2; ++answers)
    self->receive([&](std::vector<float>& c) { sum = std::move(c); }, [&](double d) { product = d; },
                  [&](std::string& e) { failure = e; });
  if (!failure.empty()) {
    std::printf("a kernel actor failed: %s\n", failure.c_str());
    return 1;
  }

  // The same on the CPU.
  bool sum_ok = sum.size() == n;
  double want = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto x = static_cast<float>(i % 100), y = static_cast<float>(i % 7);
    sum_ok = sum_ok && sum[i] == x + y;
    want += double{x} * y;
  }
  const bool dot_ok = product == want;
  std::printf("vadd of %zu floats: %s; dot product %.0f (CPU: %.0f): %s\n", n, sum_ok ? "correct" : "WRONG", product,
              want, dot_ok ? "correct" : "WRONG");
  return sum_ok && dot_ok ? 0 : 1;
}
