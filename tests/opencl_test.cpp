// troupe::opencl: devices, programs, kernel actors (PoCL on the CPU in CI).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "troupe/opencl/opencl.hpp"
#include "troupe/troupe.hpp"

using namespace std::chrono_literals;
using troupe::errc;
using troupe::error;
namespace ocl = troupe::opencl;

namespace {

constexpr const char* kernels = R"CL(
__kernel void vadd(__global const float* a, __global const float* b, __global float* c) {
  size_t i = get_global_id(0);
  c[i] = a[i] + b[i];
}
__kernel void scale(__global float* x, float k) {
  size_t i = get_global_id(0);
  x[i] *= k;
}
__kernel void square(__global const float* x, __global float* y) {
  size_t i = get_global_id(0);
  y[i] = x[i] * x[i];
}
// Sum of each work group's elements (local memory), one result per group.
__kernel void group_sum(__global const float* x, __global float* out, __local float* tmp) {
  size_t l = get_local_id(0), n = get_local_size(0);
  tmp[l] = x[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = n / 2; s > 0; s /= 2) {
    if (l < s) tmp[l] += tmp[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) out[get_group_id(0)] = tmp[0];
}
// Busy for a while (a long kernel for the in-flight tests).
__kernel void spin(__global const int* rounds, __global int* out) {
  size_t i = get_global_id(0);
  int acc = 0;
  for (int r = 0; r < rounds[0]; ++r) acc = acc * 1103515245 + 12345 + (int)i;
  out[i] = acc;
}
)CL";

struct fixture : ::testing::Test {
  void SetUp() override {
    if (ocl::devices().empty()) GTEST_SKIP() << "no OpenCL device (scripts/setup installs PoCL)";
    dev = ocl::default_device();
    prog = ocl::program::build(dev, kernels);
  }
  ocl::device dev;
  ocl::program prog;
};

std::vector<float> iota_f(std::size_t n, float start = 0) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

}  // namespace

TEST(opencl_device, lists_devices_with_properties) {
  auto all = ocl::devices();
  if (all.empty()) GTEST_SKIP() << "no OpenCL device";
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& info = all[i].info();
    EXPECT_FALSE(info.name.empty());
    EXPECT_FALSE(info.platform.empty());
    EXPECT_GT(info.compute_units, 0U);
    EXPECT_GT(info.max_work_group_size, 0U);
    EXPECT_GT(info.global_memory, 0U);
    EXPECT_EQ(info.index, i);
    EXPECT_TRUE(ocl::find_device(i) == all[i]);
  }
  EXPECT_TRUE(ocl::find_device(all[0].info().name) == all[0]);
  EXPECT_TRUE(ocl::find_device(all[0].info().type) == all[0]);
  EXPECT_THROW(ocl::find_device(all.size()), ocl::opencl_error);
  EXPECT_THROW(ocl::find_device("no such device name"), ocl::opencl_error);
}

TEST_F(fixture, build_failure_carries_the_log) {
  try {
    ocl::program::build(dev, "__kernel void broken(__global float* x) { x[0] = undefined_name; }");
    FAIL() << "the program built";
  } catch (const ocl::opencl_error& e) {
    EXPECT_EQ(e.code(), CL_BUILD_PROGRAM_FAILURE);
    EXPECT_NE(e.build_log().find("undefined_name"), std::string::npos) << e.build_log();
    EXPECT_NE(std::string{e.what()}.find("undefined_name"), std::string::npos);
  }
  EXPECT_THROW(ocl::program::from_file(dev, "/nonexistent/kernel.cl"), ocl::opencl_error);
  EXPECT_THROW(prog.make_kernel("no_such_kernel"), ocl::opencl_error);
}

TEST_F(fixture, vector_add_request) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const std::size_t n = 1000;
  auto vadd = ocl::spawn(sys, prog, "vadd", ocl::nd_range{{n}}, ocl::in<float>{}, ocl::in<float>{}, ocl::out<float>{});
  troupe::scoped_actor self{sys};
  std::vector<float> got;
  self->request(vadd, 10s, iota_f(n), iota_f(n, 1))
      .receive([&](std::vector<float>& c) { got = std::move(c); }, [](error& e) { FAIL() << e.to_string(); });
  ASSERT_EQ(got.size(), n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], static_cast<float>(2 * i + 1)) << i;
}
