// troupe::opencl with the C++ bindings as the user configures them: this
// file includes <CL/opencl.hpp> itself, before troupe's headers and without
// CL_HPP_ENABLE_EXCEPTIONS (the bindings then report failures by return
// codes), and uses kernel actors, mem_refs and a device stage all the same.
// The target links troupe::opencl: its usage requirements must not turn
// the bindings' exceptions on.
#if defined(CL_HPP_ENABLE_EXCEPTIONS)
#error "troupe::opencl's usage requirements define CL_HPP_ENABLE_EXCEPTIONS: the bindings' error mode is the user's"
#endif
#include <CL/opencl.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <string>
#include <vector>

#include "troupe/opencl.hpp"
#include "troupe/troupe.hpp"

using namespace std::chrono_literals;
namespace ocl = troupe::opencl;

namespace {
constexpr const char* bindings_kernels = R"CL(
__kernel void twice(__global const int* in, __global int* out) {
  size_t i = get_global_id(0);
  out[i] = 2 * in[i];
}
__kernel void plus_one(__global const int* in, __global int* out, uint n) {
  size_t i = get_global_id(0);
  if (i < n) out[i] = in[i] + 1;
}
)CL";
}  // namespace

TEST(opencl_bindings, troupe_works_with_the_bindings_without_exceptions) {
  if (ocl::devices().empty()) GTEST_SKIP() << "no OpenCL device (scripts/setup installs PoCL)";
  const auto dev = ocl::default_device();
  const auto prog = ocl::program::build(dev, bindings_kernels);
  // This file's own calls return their errors instead of throwing.
  cl_int err = CL_SUCCESS;
  const cl::Buffer none{dev.context(), CL_MEM_READ_WRITE, 0, nullptr, &err};
  EXPECT_EQ(err, CL_INVALID_BUFFER_SIZE);

  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  constexpr std::size_t n = 100;
  std::vector<int> xs(n);
  std::iota(xs.begin(), xs.end(), 0);
  auto twice = ocl::spawn(sys, prog, "twice", ocl::nd_range{{n}}, ocl::in<int>{}, ocl::out<int, ocl::ref>{});
  auto again = ocl::spawn(sys, prog, "twice", ocl::nd_range{{n}}, ocl::in<int, ocl::ref>{}, ocl::out<int>{});
  ocl::mem_ref<int> mid;
  self->request(twice, 10s, xs)
      .receive([&](ocl::mem_ref<int>& r) { mid = std::move(r); }, [](troupe::error& e) { FAIL() << e.to_string(); });
  ASSERT_TRUE(mid);
  std::vector<int> got;
  self->request(again, 10s, mid)
      .receive([&](std::vector<int>& v) { got = std::move(v); }, [](troupe::error& e) { FAIL() << e.to_string(); });
  ASSERT_EQ(got.size(), n);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(got[i], 4 * static_cast<int>(i)) << i;
  EXPECT_EQ(mid.to_host()[3], 6);
  // Failures still come back as troupe errors and opencl_error.
  std::string what;
  self->request(twice, 10s, std::vector<int>{})
      .receive([&](ocl::mem_ref<int>&) { what = "a value"; }, [&](troupe::error& e) { what = e.to_string(); });
  EXPECT_NE(what.find("empty"), std::string::npos) << what;
  EXPECT_THROW((void)ocl::mem_ref<int>::upload(dev, {}), ocl::opencl_error);
  EXPECT_THROW((void)prog.make_kernel("no_such_kernel"), ocl::opencl_error);

  // A device stage too.
  std::vector<int> out;
  troupe::spawn_pattern(sys, troupe::pipeline{troupe::stream::source([i = 0]() mutable -> std::optional<int> {
                                                if (i == 1000) return std::nullopt;
                                                return i++;
                                              }),
                                              ocl::device_map<int, int>(prog, "plus_one", {.size = 128}),
                                              troupe::stream::sink([&](int y) { out.push_back(y); })})
      .wait();
  ASSERT_EQ(out.size(), 1000U);
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(out[static_cast<std::size_t>(i)], i + 1) << i;
}
