// opencl_matmul: square matrix products on an OpenCL device, checked
// against a loop on the CPU.
//   1. One kernel actor that multiplies two N x N matrices; its range comes
//      from each request (preprocess), so it serves any N.
//   2. A chain of two kernel actors, A*B then (A*B)*C: the first one's result
//      stays on the device (out<float, ref>) and is the second one's input
//      (in<float, ref>); only the final product is read back (to_host).
// usage: opencl_matmul [N]   (N x N matrices, default 64)
// Prints a message and exits 0 when there is no OpenCL device.
#include <troupe/opencl.hpp>
#include <troupe/troupe.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace std::chrono_literals;
namespace ocl = troupe::opencl;

// [ocl_matmul_source]
// c = a * b for n x n matrices, row-major; one work item per element of c.
constexpr const char* source = R"CL(
__kernel void matmul(__global const float* a, __global const float* b, __global float* c, uint n) {
  size_t col = get_global_id(0), row = get_global_id(1);
  float acc = 0.0f;
  for (uint k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];
  c[row * n + col] = acc;
}
)CL";
// [/ocl_matmul_source]

namespace {

using matrix = std::vector<float>;

// Small integers: every product and sum is exact in float for the sizes used here.
matrix make(std::size_t n, int mod, int shift) {
  matrix m(n * n);
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<float>(static_cast<int>(i % mod) - shift);
  return m;
}

matrix cpu_matmul(const matrix& a, const matrix& b, std::size_t n) {
  matrix c(n * n);
  for (std::size_t row = 0; row < n; ++row)
    for (std::size_t col = 0; col < n; ++col) {
      double acc = 0;
      for (std::size_t k = 0; k < n; ++k) acc += double{a[row * n + k]} * b[k * n + col];
      c[row * n + col] = static_cast<float>(acc);
    }
  return c;
}

// The largest difference, relative to the largest magnitude of the CPU's result.
double relative_error(const matrix& got, const matrix& want) {
  if (got.size() != want.size()) return 1e30;
  double diff = 0, scale = 1;
  for (std::size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, std::fabs(double{got[i]} - want[i]));
    scale = std::max(scale, std::fabs(double{want[i]}));
  }
  return diff / scale;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 64;
  if (argc == 2) {
    char* end = nullptr;
    n = std::strtoul(argv[1], &end, 10);
    if (*end != '\0' || n == 0 || n > 4096) {
      std::fprintf(stderr, "usage: %s [N]   (1 <= N <= 4096, default 64)\n", argv[0]);
      return 2;
    }
  } else if (argc > 2) {
    std::fprintf(stderr, "usage: %s [N]\n", argv[0]);
    return 2;
  }
  if (ocl::devices().empty()) {
    std::printf("no OpenCL device found: skipped (scripts/setup installs PoCL)\n");
    return 0;
  }
  const ocl::device dev = ocl::default_device();
  const auto prog = ocl::program::build(dev, source);
  std::printf("device: %s; %zu x %zu matrices\n", dev.info().name.c_str(), n, n);

  const matrix a = make(n, 7, 3), b = make(n, 5, 2), c = make(n, 3, 1);
  const matrix ab = cpu_matmul(a, b, n), abc = cpu_matmul(ab, c, n);
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  bool ok = true;

  // 1. One kernel actor for any size: the range is set per request from its
  // last argument, and the output's size follows (work items by default).
  {
    // [ocl_matmul_one]
    auto matmul = ocl::spawn(
        sys,
        ocl::kernel(prog, "matmul", ocl::nd_range{{1, 1}})
            .preprocess([](ocl::nd_range& r, const matrix&, const matrix&, cl_uint size) { r.global = {size, size}; })
            .max_in_flight(2),
        ocl::in<float>{}, ocl::in<float>{}, ocl::out<float>{}, ocl::scalar<cl_uint>{});
    matrix got;
    self->request(matmul, 60s, a, b, static_cast<cl_uint>(n))
        .receive([&](matrix& product) { got = std::move(product); },
                 [](troupe::error& e) { std::printf("matmul failed: %s\n", e.to_string().c_str()); });
    // [/ocl_matmul_one]
    const double err = relative_error(got, ab);
    std::printf("A*B on the device: %s (largest relative difference %g)\n", err <= 1e-5 ? "matches the CPU" : "WRONG",
                err);
    ok = ok && err <= 1e-5;
  }

  // 2. Two kernel actors in a chain: A*B stays on the device.
  {
    const ocl::nd_range range{{n, n}};
    // [ocl_matmul_chain]
    // The first kernel's product stays on the device: its reply is a mem_ref<float>.
    auto first = ocl::spawn(sys, prog, "matmul", range, ocl::in<float>{}, ocl::in<float>{}, ocl::out<float, ocl::ref>{},
                            ocl::scalar<cl_uint>{});
    // The second one takes device data for both matrices and leaves its product there too.
    auto second = ocl::spawn(sys, prog, "matmul", range, ocl::in<float, ocl::ref>{}, ocl::in<float, ocl::ref>{},
                             ocl::out<float, ocl::ref>{}, ocl::scalar<cl_uint>{});
    const auto c_on_device = ocl::mem_ref<float>::upload(dev, c);  // copied once, usable by every request

    ocl::mem_ref<float> ab_on_device, abc_on_device;
    self->request(first, 60s, a, b, static_cast<cl_uint>(n))
        .receive([&](ocl::mem_ref<float>& r) { ab_on_device = std::move(r); },
                 [](troupe::error& e) { std::printf("first: %s\n", e.to_string().c_str()); });
    if (ab_on_device)  // n * n floats on the device; nothing was read back
      self->request(second, 60s, ab_on_device, c_on_device, static_cast<cl_uint>(n))
          .receive([&](ocl::mem_ref<float>& r) { abc_on_device = std::move(r); },
                   [](troupe::error& e) { std::printf("second: %s\n", e.to_string().c_str()); });
    // Only now does the data come back to the host (this blocks until it is read).
    const matrix got = abc_on_device ? abc_on_device.to_host() : matrix{};
    // [/ocl_matmul_chain]
    const double err = relative_error(got, abc);
    std::printf("(A*B)*C through two kernel actors, A*B kept on the device: %s (largest relative difference %g)\n",
                err <= 1e-5 ? "matches the CPU" : "WRONG", err);
    ok = ok && err <= 1e-5;
  }
  return ok ? 0 : 1;
}
