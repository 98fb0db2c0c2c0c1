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

namespace st = troupe::stream;

using namespace std::chrono_literals;
using troupe::errc;
using troupe::error;
namespace ocl = troupe::opencl;

// PoCL and the LLVM it compiles kernels with are not built with the
// sanitizers: reports with a frame inside them are not about troupe (PoCL
// keeps some compiler state until exit, and frees it only sometimes).
// Everything else stays checked.
// NOLINTBEGIN(bugprone-reserved-identifier,readability-identifier-naming): the sanitizers' hook names
extern "C" const char* __lsan_default_suppressions() { return "leak:libpocl\nleak:libLLVM-15.so\n"; }
extern "C" const char* __tsan_default_suppressions() {
  // libpocl and its device modules (libpocl-devices-pthread.so). No
  // called_from_lib for them: it hid their mutexes and their operator
  // new/delete from TSan, so memory PoCL freed and reused kept another
  // thread's history, and PoCL's own string handling (libstdc++, on its
  // device threads, while it compiles a kernel that is not in its cache yet)
  // came out as races without a PoCL frame to suppress them by.
  return "race:libpocl\nmutex:libpocl\ndeadlock:libpocl\n"
         "race:libLLVM-15.so\n";
}
// NOLINTEND(bugprone-reserved-identifier,readability-identifier-naming)

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
// Uses a scratch buffer of its own (one element per work item).
__kernel void via_scratch(__global const float* x, __global float* y, __global float* tmp) {
  size_t i = get_global_id(0);
  tmp[i] = 2.0f * x[i];
  y[i] = tmp[i] + 1.0f;
}
// c[i] = a[i] + b[i] for the ids of the range (with its offset).
__kernel void vadd_at(__global const float* a, __global const float* b, __global float* c) {
  size_t i = get_global_id(0);
  c[i] = a[i] + b[i];
}
// Device-stage kernels: (const In*, Out*, uint n), one output per input.
__kernel void twice_plus_one(__global const float* in, __global float* out, uint n) {
  size_t i = get_global_id(0);
  if (i < n) out[i] = 2.0f * in[i] + 1.0f;
}
__kernel void to_int(__global const float* in, __global int* out, uint n) {
  size_t i = get_global_id(0);
  if (i < n) out[i] = (int)in[i];
}
// Busy for a while (a long kernel for the in-flight tests).
__kernel void spin(__global const int* rounds, __global int* out) {
  size_t i = get_global_id(0);
  int acc = 0;
  for (int r = 0; r < rounds[0]; ++r) acc = acc * 1103515245 + 12345 + (int)i;
  out[i] = acc;
}
)CL";

struct opencl_kernel : ::testing::Test {
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

TEST_F(opencl_kernel, build_failure_carries_the_log) {
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

TEST_F(opencl_kernel, vector_add_request) {
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

TEST_F(opencl_kernel, in_out_and_scalar_arguments) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto scale = ocl::spawn(sys, prog, "scale", ocl::nd_range{{256}}, ocl::in_out<float>{}, ocl::scalar<float>{});
  troupe::scoped_actor self{sys};
  std::vector<float> got;
  self->request(scale, 10s, iota_f(256), 3.0f)
      .receive([&](std::vector<float>& x) { got = std::move(x); }, [](error& e) { FAIL() << e.to_string(); });
  ASSERT_EQ(got.size(), 256U);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], 3.0f * static_cast<float>(i));
}

TEST_F(opencl_kernel, scratch_buffers_and_offsets) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  auto scratchy = ocl::spawn(sys, prog, "via_scratch", ocl::nd_range{{128}}, ocl::in<float>{}, ocl::out<float>{},
                             ocl::scratch<float>{});
  std::vector<float> got;
  self->request(scratchy, 10s, iota_f(128))
      .receive([&](std::vector<float>& y) { got = std::move(y); }, [](error& e) { FAIL() << e.to_string(); });
  ASSERT_EQ(got.size(), 128U);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], 2.0f * static_cast<float>(i) + 1.0f);
  // Work items 4 .. 11 of buffers of 16: the offset moves the ids.
  auto shifted = ocl::spawn(sys, prog, "vadd_at", ocl::nd_range{{8}, {4}, {4}}, ocl::in_out<float>{}, ocl::in<float>{},
                            ocl::in_out<float>{});
  std::vector<float> a = iota_f(16), c(16, -1.0f);
  std::vector<float> got_a, got_c;
  self->request(shifted, 10s, a, iota_f(16, 100), c)
      .receive(
          [&](std::vector<float>& ra, std::vector<float>& rc) {
            got_a = std::move(ra);
            got_c = std::move(rc);
          },
          [](error& e) { FAIL() << e.to_string(); });
  ASSERT_EQ(got_c.size(), 16U);
  EXPECT_EQ(got_a, a);  // in_out: read back unchanged
  for (std::size_t i = 0; i < 16; ++i) {
    const float want = (i >= 4 && i < 12) ? 2.0f * static_cast<float>(i) + 100.0f : -1.0f;
    EXPECT_EQ(got_c[i], want) << i;
  }
}

TEST_F(opencl_kernel, local_memory_and_size_rules) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  constexpr std::size_t n = 1024, group = 64;
  auto sums = ocl::spawn(sys, prog, "group_sum", ocl::nd_range{{n}, {}, {group}}, ocl::in<float>{},
                         ocl::out<float>{[](const ocl::launch_info& l) { return l.range.work_items() / group; }},
                         ocl::local<float>{group});
  troupe::scoped_actor self{sys};
  std::vector<float> got;
  self->request(sums, 10s, std::vector<float>(n, 1.0f))
      .receive([&](std::vector<float>& x) { got = std::move(x); }, [](error& e) { FAIL() << e.to_string(); });
  ASSERT_EQ(got.size(), n / group);
  for (float v : got) EXPECT_EQ(v, static_cast<float>(group));
}

TEST_F(opencl_kernel, preprocess_sets_the_range_and_postprocess_shapes_the_reply) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto spec = ocl::kernel(prog, "square", ocl::nd_range{{1}})
                  .preprocess([](ocl::nd_range& r, const std::vector<float>& x) { r.global = {x.size()}; })
                  .postprocess([](std::vector<float> y) { return std::accumulate(y.begin(), y.end(), 0.0); });
  auto sum_of_squares = ocl::spawn(sys, spec, ocl::in<float>{}, ocl::out<float>{});
  static_assert(std::is_same_v<decltype(sum_of_squares), troupe::typed_actor<double(std::vector<float>)>>);
  troupe::scoped_actor self{sys};
  for (std::size_t n : {1U, 7U, 100U, 3000U}) {
    double got = -1;
    self->request(sum_of_squares, 10s, iota_f(n))
        .receive([&](double s) { got = s; }, [](error& e) { FAIL() << e.to_string(); });
    double want = 0;
    for (std::size_t i = 0; i < n; ++i) want += static_cast<double>(i) * static_cast<double>(i);
    EXPECT_EQ(got, want) << n;
  }
}

TEST_F(opencl_kernel, data_stays_on_the_device_between_kernel_actors) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  constexpr std::size_t n = 512;
  auto square = ocl::spawn(sys, prog, "square", ocl::nd_range{{n}}, ocl::in<float>{}, ocl::out<float, ocl::ref>{});
  auto add = ocl::spawn(sys, prog, "vadd", ocl::nd_range{{n}}, ocl::in<float, ocl::ref>{}, ocl::in<float, ocl::ref>{},
                        ocl::out<float>{});
  static_assert(std::is_same_v<decltype(square), troupe::typed_actor<ocl::mem_ref<float>(std::vector<float>)>>);
  troupe::scoped_actor self{sys};
  ocl::mem_ref<float> sq;
  self->request(square, 10s, iota_f(n))
      .receive([&](ocl::mem_ref<float>& r) { sq = r; }, [](error& e) { FAIL() << e.to_string(); });
  ASSERT_TRUE(sq);
  EXPECT_EQ(sq.size(), n);
  auto ones = ocl::mem_ref<float>::upload(dev, std::vector<float>(n, 1.0f));
  std::vector<float> got;
  const auto before = ocl::transfers();
  self->request(add, 10s, sq, ones)
      .receive([&](std::vector<float>& c) { got = std::move(c); }, [](error& e) { FAIL() << e.to_string(); });
  // Both inputs were on the device: nothing went there, one result came back.
  const auto after = ocl::transfers();
  EXPECT_EQ(after.to_device - before.to_device, 0U);
  EXPECT_EQ(after.to_host - before.to_host, 1U);
  EXPECT_EQ(after.bytes_to_host - before.bytes_to_host, n * sizeof(float));
  ASSERT_EQ(got.size(), n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], static_cast<float>(i * i + 1)) << i;
  auto back = sq.to_host();  // a CPU actor asks for a host copy
  ASSERT_EQ(back.size(), n);
  EXPECT_EQ(back[5], 25.0f);
  // in_out with the data on the device, the result to the host.
  auto scale = ocl::spawn(sys, prog, "scale", ocl::nd_range{{n}}, ocl::in_out<float, ocl::ref, ocl::vec>{},
                          ocl::scalar<float>{});
  self->request(scale, 10s, sq, 2.0f)
      .receive([&](std::vector<float>& x) { got = std::move(x); }, [](error& e) { FAIL() << e.to_string(); });
  ASSERT_EQ(got.size(), n);
  EXPECT_EQ(got[3], 18.0f);
}

namespace {
// scramble: v[i] goes through `rounds` steps of a random number generator
// (slow on purpose); copy_u: out[i] = in[i].
constexpr const char* ref_kernels = R"CL(
__kernel void scramble(__global uint* v, uint rounds) {
  size_t i = get_global_id(0);
  uint x = v[i];
  for (uint r = 0; r < rounds; ++r) x = x * 1664525u + 1013904223u;
  v[i] = x;
}
__kernel void copy_u(__global const uint* in, __global uint* out) {
  size_t i = get_global_id(0);
  out[i] = in[i];
}
)CL";
}  // namespace

// A kernel writes into a mem_ref's buffer (in_out<T, ref>). A copy of that
// mem_ref made before the write and sent to another kernel actor (another
// queue) after the write was enqueued reads what the write leaves, not what
// was there before. Both requests wait on a user event, so that they become
// runnable together: a reader that waited only for the data's original
// ready event would run while the slow writer is still at work.
TEST_F(opencl_kernel, a_copy_of_a_mem_ref_waits_for_an_in_out_write) {
  const auto p = ocl::program::build(dev, ref_kernels);
  constexpr std::size_t n = 4;
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto writer =
      ocl::spawn(sys, p, "scramble", ocl::nd_range{{n}}, ocl::in_out<cl_uint, ocl::ref>{}, ocl::scalar<cl_uint>{});
  auto reader = ocl::spawn(sys, p, "copy_u", ocl::nd_range{{n}}, ocl::in<cl_uint, ocl::ref>{}, ocl::out<cl_uint>{});
  troupe::scoped_actor self{sys};
  const std::vector<cl_uint> start{1, 2, 3, 4};
  {  // PoCL compiles each kernel at its first launch: not during the race below
    auto warm = ocl::mem_ref<cl_uint>::upload(dev, start);
    self->request(writer, 30s, warm, cl_uint{1})
        .receive([](ocl::mem_ref<cl_uint>&) {}, [](error& e) { FAIL() << e.to_string(); });
    self->request(reader, 30s, warm).receive([](std::vector<cl_uint>&) {}, [](error& e) { FAIL() << e.to_string(); });
  }
  cl_int made = CL_SUCCESS;
  cl::UserEvent gate{dev.context(), &made};
  ASSERT_EQ(made, CL_SUCCESS);
  const auto up = ocl::mem_ref<cl_uint>::upload(dev, start);
  const ocl::mem_ref<cl_uint> data{dev, up.buffer(), n, gate};
  const auto old = data;  // NOLINT(performance-unnecessary-copy-initialization): a copy made before the write
  self->send(writer, data, cl_uint{100'000'000});
  // The writer has enqueued its kernel once the data's ready event is no
  // longer the gate (the write is the data's last one now).
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (data.ready()() == gate() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  self->send(reader, old);
  gate.setStatus(CL_COMPLETE);
  std::vector<cl_uint> read, written;
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(self->receive_for(
        60s, [&](ocl::mem_ref<cl_uint>& r) { written = r.to_host(); }, [&](std::vector<cl_uint>& v) { read = v; },
        [](error& e) { FAIL() << e.to_string(); }));
  ASSERT_EQ(written.size(), n);
  EXPECT_NE(written, start);
  EXPECT_EQ(read, written) << "the reader ran before the write had ended";
}

// out<T, ref> buffers go back to the actor's pool when the last copy of the
// mem_ref made with them goes: requests one after the other, each dropping
// its reply before the next, make no new device buffers.
TEST_F(opencl_kernel, out_ref_buffers_return_to_the_pool) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  constexpr std::size_t n = 256;
  auto square = ocl::spawn(sys, prog, "square", ocl::nd_range{{n}}, ocl::in<float>{}, ocl::out<float, ocl::ref>{});
  troupe::scoped_actor self{sys};
  auto one = [&] {
    float first = -1;
    self->request(square, 10s, iota_f(n, 2))
        .receive([&](ocl::mem_ref<float>& r) { first = r.to_host()[0]; }, [](error& e) { FAIL() << e.to_string(); });
    return first;
  };
  ASSERT_EQ(one(), 4.0f);  // the pool has its buffers now
  const auto before = ocl::buffers_created();
  constexpr int requests = 20;
  for (int i = 0; i < requests; ++i) ASSERT_EQ(one(), 4.0f) << i;
  EXPECT_LE(ocl::buffers_created() - before, 2U) << "device buffers made for " << requests << " requests";
}

TEST_F(opencl_kernel, bad_requests_are_answered_with_errors) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  auto expect_error = [&](const auto& handle, const auto&... xs) {
    std::string what;
    self->request(handle, 10s, xs...)
        .receive([&](std::vector<float>&) { what = "a value"; },
                 [&](error& e) {
                   EXPECT_EQ(e.code(), errc::runtime_error);
                   what = e.message();
                 });
    return what;
  };
  auto vadd = ocl::spawn(sys, prog, "vadd", ocl::nd_range{{16}}, ocl::in<float>{}, ocl::in<float>{}, ocl::out<float>{});
  auto what = expect_error(vadd, std::vector<float>{}, iota_f(16));
  EXPECT_NE(what.find("argument 0"), std::string::npos) << what;
  EXPECT_NE(what.find("empty"), std::string::npos) << what;
  // A local size that does not divide the global one, known only per request.
  auto odd = ocl::spawn(sys,
                        ocl::kernel(prog, "square", ocl::nd_range{{16}, {}, {8}})
                            .preprocess([](ocl::nd_range& r, const std::vector<float>& x) { r.global = {x.size()}; }),
                        ocl::in<float>{}, ocl::out<float>{});
  what = expect_error(odd, iota_f(12));
  EXPECT_NE(what.find("does not divide"), std::string::npos) << what;
  // A size rule that gives 0.
  auto none = ocl::spawn(sys, prog, "square", ocl::nd_range{{16}}, ocl::in<float>{}, ocl::out<float>{0});
  what = expect_error(none, iota_f(16));
  EXPECT_NE(what.find("0 elements"), std::string::npos) << what;
  // The actor is still there and answers good requests.
  std::vector<float> got;
  self->request(vadd, 10s, iota_f(16), iota_f(16))
      .receive([&](std::vector<float>& c) { got = c; }, [](error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(got.size(), 16U);
}

TEST_F(opencl_kernel, spawn_checks_the_kernel_and_its_arguments) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  try {
    ocl::spawn(sys, prog, "vadd", ocl::nd_range{{16}}, ocl::in<float>{}, ocl::out<float>{});
    FAIL() << "spawned with too few tags";
  } catch (const ocl::opencl_error& e) {
    EXPECT_NE(std::string{e.what()}.find("takes 3 arguments"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ocl::spawn(sys, prog, "nope", ocl::nd_range{{16}}, ocl::in<float>{}, ocl::out<float>{}),
               ocl::opencl_error);
  EXPECT_THROW(ocl::spawn(sys, prog, "square", ocl::nd_range{{}}, ocl::in<float>{}, ocl::out<float>{}),
               ocl::opencl_error);
  EXPECT_THROW(ocl::spawn(sys, prog, "square", ocl::nd_range{{1, 2, 3, 4}}, ocl::in<float>{}, ocl::out<float>{}),
               ocl::opencl_error);
  EXPECT_THROW(ocl::spawn(sys, ocl::kernel(prog, "square", ocl::nd_range{{16}}).max_in_flight(0), ocl::in<float>{},
                          ocl::out<float>{}),
               ocl::opencl_error);
  EXPECT_EQ(sys.live_actors(), 0U);
}

namespace {
// A kernel that runs for a while: `rounds` iterations per work item.
auto spawn_spin(troupe::actor_system& sys, const ocl::program& prog, std::size_t in_flight) {
  return ocl::spawn(sys, ocl::kernel(prog, "spin", ocl::nd_range{{64}}).max_in_flight(in_flight), ocl::in<int>{},
                    ocl::out<int>{});
}
}  // namespace

TEST_F(opencl_kernel, requests_beyond_the_in_flight_bound_wait_in_the_mailbox) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto spin = spawn_spin(sys, prog, 2);
  troupe::scoped_actor self{sys};
  constexpr int sent = 12;
  for (int i = 0; i < sent; ++i) self->send(spin, std::vector<int>{2'000'000});
  // At most 2 run; the others stay queued where senders see them.
  bool refused = false;
  for (int tries = 0; tries < 100 && !refused; ++tries) {
    refused = !self->send_if(spin.address(), 4, std::vector<int>{1});
    if (!refused) std::this_thread::sleep_for(1ms);
  }
  EXPECT_TRUE(refused) << "send_if never saw a backlog";
  int replies = 0;
  for (bool got = true; got && replies < sent;) {
    got = self->receive_for(60s, [&](std::vector<int>& out) {
      EXPECT_EQ(out.size(), 64U);
      ++replies;
    });
  }
  EXPECT_EQ(replies, sent);
}

TEST_F(opencl_kernel, replies_keep_the_order_of_requests) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto scale = ocl::spawn(sys, ocl::kernel(prog, "scale", ocl::nd_range{{8}}).max_in_flight(3), ocl::in_out<float>{},
                          ocl::scalar<float>{});
  troupe::scoped_actor self{sys};
  constexpr int n = 200;
  for (int i = 0; i < n; ++i) self->send(scale, std::vector<float>(8, 1.0f), static_cast<float>(i));
  for (int i = 0; i < n; ++i) {
    float got = -1;
    std::string failed;
    ASSERT_TRUE(
        self->receive_for(30s, [&](std::vector<float>& x) { got = x[0]; }, [&](error& e) { failed = e.to_string(); }));
    ASSERT_EQ(failed, "") << "reply " << i;
    ASSERT_EQ(got, static_cast<float>(i));
  }
}

TEST_F(opencl_kernel, many_actors_share_a_device) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  constexpr std::size_t n = 256;
  constexpr int actors = 32, per_actor = 20;
  std::atomic<int> ok{0}, bad{0};
  for (int a = 0; a < actors; ++a) {
    auto vadd =
        ocl::spawn(sys, prog, "vadd", ocl::nd_range{{n}}, ocl::in<float>{}, ocl::in<float>{}, ocl::out<float>{});
    sys.spawn([vadd, a, &ok, &bad](troupe::event_actor& self) {
      for (int i = 0; i < per_actor; ++i) {
        const float k = static_cast<float>(a * 1000 + i);
        self.request(vadd, 30s, std::vector<float>(n, k), std::vector<float>(n, 1.0f))
            .then([&ok, &bad,
                   k](std::vector<float>& c) { (c.size() == n && c[0] == k + 1 && c[n - 1] == k + 1 ? ok : bad)++; },
                  [&bad](error&) { bad++; });
      }
      return troupe::behavior{};
    });
  }
  for (int i = 0; i < 60'000 && ok.load() + bad.load() < actors * per_actor; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(ok.load(), actors * per_actor);
  EXPECT_EQ(bad.load(), 0);
}

TEST_F(opencl_kernel, shutdown_with_kernels_in_flight_neither_hangs_nor_leaks) {
  std::atomic<int> answered{0};
  {
    troupe::actor_system sys{troupe::config{.workers = 2}};
    auto spin = spawn_spin(sys, prog, 2);
    sys.spawn([spin, &answered](troupe::event_actor& self) {
      for (int i = 0; i < 6; ++i)
        self.request(spin, troupe::infinite, std::vector<int>{3'000'000})
            .then([&answered](std::vector<int>&) { answered++; }, [&answered](error&) { answered++; });
      return troupe::behavior{};
    });
    std::this_thread::sleep_for(20ms);
  }  // the system shuts down with kernels running and requests queued
  EXPECT_LE(answered.load(), 6);
}

// Requests still in a kernel actor's mailbox when the actor system shuts down
// are answered with an error and never reach the device; only the requests
// already enqueued (at most max_in_flight) are waited for. Every request
// reads a mem_ref whose ready event is a user event, which the test completes
// only once the queued requests have been answered: until then nothing the
// actor enqueued can run, so a request that ran was enqueued before the
// shutdown began.
TEST_F(opencl_kernel, shutdown_answers_queued_requests_without_running_them) {
  constexpr int sent = 20;
  constexpr int in_flight = 2;
  constexpr std::size_t n = 64;
  cl_int made = CL_SUCCESS;
  cl::UserEvent gate{dev.context(), &made};
  ASSERT_EQ(made, CL_SUCCESS);
  const auto data = ocl::mem_ref<float>::upload(dev, iota_f(n));
  const ocl::mem_ref<float> gated{dev, data.buffer(), n, gate};
  std::atomic<int> ran{0}, refused{0}, other{0};
  std::thread opener;
  {
    troupe::actor_system sys{troupe::config{.workers = 2}};
    auto sq = ocl::spawn(sys, ocl::kernel(prog, "square", ocl::nd_range{{n}}).max_in_flight(in_flight),
                         ocl::in<float, ocl::ref>{}, ocl::out<float>{});
    sys.spawn([sq, gated, &ran, &refused, &other](troupe::event_actor& self) {
      for (int i = 0; i < sent; ++i)
        self.request(sq, troupe::infinite, gated)
            .then([&ran](std::vector<float>&) { ran++; },
                  [&refused, &other](error& e) { (e == errc::system_shutdown ? refused : other)++; });
      return troupe::behavior{};
    });
    // Opens the gate once the queued requests are answered (or after a
    // deadline, so that the test ends either way).
    opener = std::thread{[&refused, &gate] {
      const auto deadline = std::chrono::steady_clock::now() + 20s;
      while (refused.load() < sent - in_flight && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
      gate.setStatus(CL_COMPLETE);
    }};
  }  // shutdown: in_flight requests on the device, the others in the mailbox
  opener.join();
  EXPECT_EQ(refused.load(), sent - in_flight);
  EXPECT_LE(ran.load(), in_flight);
  // The requests on the device are answered if their requester still runs
  // when they complete (a value, or the error of an actor that ended).
  EXPECT_LE(ran.load() + other.load(), in_flight);
}

namespace {
auto float_source(std::int64_t n) {
  return st::source([i = std::int64_t{0}, n]() mutable -> std::optional<float> {
    if (i == n) return std::nullopt;
    return static_cast<float>(i++);
  });
}
}  // namespace

TEST_F(opencl_kernel, device_map_keeps_every_element_in_order) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  constexpr std::int64_t n = 100'003;  // not a multiple of the batch
  std::vector<float> got;
  got.reserve(n);
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{
               float_source(n),
               ocl::device_map<float, float>(prog, "twice_plus_one", {.size = 1000, .local = 64, .in_flight = 3}),
               st::sink([&](float y) { got.push_back(y); })});
  g.wait();
  ASSERT_EQ(static_cast<std::int64_t>(got.size()), n);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2.0f * static_cast<float>(i) + 1.0f) << i;
}

TEST_F(opencl_kernel, device_map_replicas_in_a_farm_and_other_output_types) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  constexpr std::int64_t n = 50'000;
  std::vector<int> count(n, 0);
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{float_source(n), troupe::farm{ocl::device_map<float, int>(prog, "to_int", {.size = 512}), 3},
                       st::sink([&](int v) {
                         if (v >= 0 && v < n) ++count[static_cast<std::size_t>(v)];
                       })});
  g.wait();
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(count[static_cast<std::size_t>(i)], 1) << i;
}

TEST_F(opencl_kernel, device_map_sends_a_partial_batch_when_its_input_runs_dry) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  // Element i leaves the source only after the sink has seen element i - 1:
  // a stage that waited for a full batch (4096) would stall the stream.
  struct lockstep : st::node<void, float> {
    std::atomic<std::int64_t>* seen = nullptr;
    std::int64_t next = 0;
    bool produce() {
      if (next == 50) return false;
      if (seen->load() < next) {
        pause_until(st::now() + 50'000);
        return true;
      }
      send_next(static_cast<float>(next++));
      return true;
    }
  };
  std::atomic<std::int64_t> seen{0};
  lockstep src;
  src.seen = &seen;
  std::int64_t count = 0;
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{src, ocl::device_map<float, float>(prog, "twice_plus_one", {}), st::sink([&](float y) {
                              ++count;
                              seen.store(static_cast<std::int64_t>((y - 1.0f) / 2.0f) + 1);
                            })});
  g.wait();
  EXPECT_EQ(count, 50);
}

TEST_F(opencl_kernel, device_map_checks_its_kernel_up_front) {
  using stage = ocl::device_map_node<float, float>;
  EXPECT_THROW(stage(prog, "no_such_kernel", {}), ocl::opencl_error);
  EXPECT_THROW(stage(prog, "twice_plus_one", {.size = 0}), ocl::opencl_error);
  EXPECT_THROW(stage(prog, "twice_plus_one", {.in_flight = 1}), ocl::opencl_error);
}

TEST_F(opencl_kernel, a_preprocess_can_refuse_a_request) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  constexpr std::size_t n = 64;
  auto checked = ocl::spawn(
      sys,
      ocl::kernel(prog, "vadd", ocl::nd_range{{n}})
          .preprocess([](ocl::nd_range& r, const std::vector<float>& a, const std::vector<float>& b) -> troupe::error {
            if (a.size() < r.work_items() || b.size() < r.work_items())
              return troupe::error{errc::runtime_error, "inputs shorter than the range"};
            return {};
          }),
      ocl::in<float>{}, ocl::in<float>{}, ocl::out<float>{});
  troupe::scoped_actor self{sys};
  std::string what;
  self->request(checked, 10s, iota_f(10), iota_f(10))
      .receive([&](std::vector<float>&) { what = "a value"; }, [&](error& e) { what = e.message(); });
  EXPECT_EQ(what, "inputs shorter than the range");
  std::size_t got = 0;
  self->request(checked, 10s, iota_f(n), iota_f(n))
      .receive([&](std::vector<float>& c) { got = c.size(); }, [](error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(got, n);
}

// ---- device_map as a node that waits (stream/node.hpp: waits, hold): it
// holds instead of blocking its worker, and each batch's completion callback
// wakes it.

namespace {

// Device-stage kernels that keep the device busy: slow_twice_plus_one
// spends `ROUNDS` steps of a random number generator per element before
// writing 2x + 1 (the test checks no element took the -1 branch); spin_for
// spends in[i] * 1000 steps and writes in[i].
constexpr const char* waiting_kernels = R"CL(
#ifndef ROUNDS
#define ROUNDS 100000u
#endif
__kernel void slow_twice_plus_one(__global const float* in, __global float* out, uint n) {
  size_t i = get_global_id(0);
  if (i >= n) return;
  uint acc = (uint)i;
  for (uint r = 0; r < ROUNDS; ++r) acc = acc * 1664525u + 1013904223u;
  out[i] = acc == 0x9E3779B9u ? -1.0f : 2.0f * in[i] + 1.0f;
}
__kernel void spin_for(__global const float* in, __global float* out, uint n) {
  size_t i = get_global_id(0);
  if (i >= n) return;
  ulong rounds = (ulong)in[i] * 1000ul;
  uint acc = (uint)i;
  for (ulong r = 0; r < rounds; ++r) acc = acc * 1664525u + 1013904223u;
  out[i] = acc == 0x9E3779B9u ? -1.0f : in[i];
}
)CL";

/// What a watched stage saw, written by its replica (one, on one worker or
/// thread) and read after the graph has ended.
struct stage_log {
  std::int64_t consumed = 0;
  std::int64_t wakes = 0;                      ///< on_wake calls: the stage held, and was woken
  std::int64_t wakes_after_stop = 0;           ///< ... after on_stop began: on_stop held
  std::int64_t progress_while_held = 0;        ///< elements the other graph moved between a hold and its wake
  std::int64_t seen_at_stop = -1;              ///< elements at the sink when on_stop began
  std::thread::id thread;                      ///< where the stage ran last
  std::atomic<std::int64_t> consume_calls{0};  ///< consume calls begun (read while the graph runs)
};

/// A device_map that records, around each of its calls, what it did and how
/// far something else got while it held.
struct watched_stage : ocl::device_map_node<float, float> {
  using base = ocl::device_map_node<float, float>;
  using base::base;
  stage_log* log = nullptr;
  const std::atomic<std::int64_t>* other = nullptr;  // progress of another graph (or null)
  const std::atomic<std::int64_t>* sink = nullptr;   // elements at this graph's sink (or null)
  const std::atomic<bool>* start_after = nullptr;    // on a thread of its own: start once this is set
  std::int64_t mark = 0;
  bool stopping = false;

  void on_start() {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (start_after != nullptr && !start_after->load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    base::on_start();
  }
  void consume(float& x) {
    log->consume_calls.fetch_add(1);
    base::consume(x);
    ++log->consumed;
    after();
  }
  void on_idle() {
    base::on_idle();
    after();
  }
  void on_stop() {
    stopping = true;
    if (sink != nullptr) log->seen_at_stop = sink->load();
    base::on_stop();
    after();
  }
  void on_wake() {
    ++log->wakes;
    if (stopping) ++log->wakes_after_stop;
    if (other != nullptr) log->progress_while_held += other->load() - mark;
    base::on_wake();
    after();
  }
  void after() {
    if (other != nullptr) mark = other->load();
    log->thread = std::this_thread::get_id();
  }
};

troupe::stream::options placed(bool own_thread) {
  troupe::stream::options o;
  o.placement = own_thread ? troupe::placement::own_thread() : troupe::placement::pool();
  return o;
}

}  // namespace

TEST_F(opencl_kernel, device_map_waits_without_blocking_its_worker) {
  static_assert(troupe::detail::waits<watched_stage> && !troupe::detail::needs_own_thread<watched_stage>);
  const auto slow = ocl::program::build(dev, waiting_kernels);
  troupe::actor_system sys{troupe::config{.workers = 1}};
  // Another graph on the same worker, running until told to stop.
  std::atomic<bool> stop{false};
  std::atomic<std::int64_t> other{0};
  std::thread::id other_thread;
  auto busy = troupe::spawn_pattern(sys, troupe::pipeline{st::source([&]() -> std::optional<std::int64_t> {
                                                            if (stop.load()) return std::nullopt;
                                                            return 1;
                                                          }),
                                                          st::sink([&](std::int64_t) {
                                                            other_thread = std::this_thread::get_id();
                                                            other.fetch_add(1);
                                                          })});
  constexpr std::int64_t n = 64 * 10 + 7;
  stage_log log;
  watched_stage stage{slow, "slow_twice_plus_one", {.size = 64, .local = 64, .in_flight = 2}};
  stage.log = &log;
  stage.other = &other;
  std::vector<float> got;
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{float_source(n), stage, st::sink([&](float y) { got.push_back(y); })});
  g.wait();
  stop.store(true);
  busy.wait();
  ASSERT_EQ(static_cast<std::int64_t>(got.size()), n);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2.0f * static_cast<float>(i) + 1.0f) << i;
  // The stage held (and was woken), and meanwhile the one worker ran the
  // other graph: a stage that waited for the device on it would have
  // stopped it. The stage ran on that worker, not on a thread of its own.
  EXPECT_GT(log.wakes, 0);
  EXPECT_GT(log.progress_while_held, 0);
  EXPECT_EQ(log.thread, other_thread);
}

TEST_F(opencl_kernel, device_map_on_stop_emits_every_batch_in_flight_in_order) {
  const auto slow = ocl::program::build(dev, waiting_kernels);
  for (const bool own_thread : {false, true}) {
    SCOPED_TRACE(own_thread ? "a thread per node" : "pool of 1 worker");
    troupe::actor_system sys{troupe::config{.workers = 1}};
    // The whole input at once, then the end: the stage sees it all and the
    // end in one go (on one worker, the source's one step; on threads, the
    // stage starts once the source has sent it all), so it has its four
    // full batches on the device (five slots, none emitted yet: the kernel
    // is slow) and the partial fifth to send when on_stop comes.
    constexpr std::int64_t n = 4 * 64 + 10;
    struct all_at_once : st::node<void, float> {
      std::atomic<bool>* done = nullptr;
      bool produce() {
        if (done->load()) return false;
        for (std::int64_t i = 0; i < n; ++i) send_next(static_cast<float>(i));
        done->store(true);
        return true;
      }
    };
    std::atomic<bool> source_done{false};
    all_at_once src;
    src.done = &source_done;
    stage_log log;
    std::atomic<std::int64_t> at_sink{0};
    watched_stage stage{slow, "slow_twice_plus_one", {.size = 64, .local = 64, .in_flight = 5}};
    stage.log = &log;
    stage.sink = &at_sink;
    if (own_thread) stage.start_after = &source_done;
    std::vector<float> got;
    auto o = placed(own_thread);
    o.capacity = 1024;
    auto g = troupe::spawn_pattern(sys, troupe::pipeline{src, stage, st::sink([&](float y) {
                                                           got.push_back(y);
                                                           at_sink.fetch_add(1);
                                                         })},
                                   o);
    g.wait();
    ASSERT_EQ(static_cast<std::int64_t>(got.size()), n);
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2.0f * static_cast<float>(i) + 1.0f) << i;
    EXPECT_EQ(log.consumed, n);
    // on_stop held (it was woken after it began) with full batches still to
    // emit, and the stream ended only after the last of them.
    EXPECT_GT(log.wakes_after_stop, 0);
    EXPECT_GE(log.seen_at_stop, 0);
    EXPECT_LE(log.seen_at_stop, n - 10 - 64);
  }
}

TEST_F(opencl_kernel, device_map_cancelled_while_it_holds_ends_without_waiting_for_the_device) {
  const auto slow = ocl::program::build(dev, waiting_kernels);
  using clock = std::chrono::steady_clock;
  // How long one element of spin_for takes here at `rounds` thousand steps.
  auto one_batch = [&](float rounds) {
    troupe::actor_system sys{troupe::config{.workers = 1}};
    const auto t0 = clock::now();
    troupe::spawn_pattern(
        sys, troupe::pipeline{st::source([sent = false, rounds]() mutable -> std::optional<float> {
                                if (sent) return std::nullopt;
                                sent = true;
                                return rounds;
                              }),
                              ocl::device_map<float, float>(slow, "spin_for", {.size = 1}), st::sink([](float) {})})
        .wait();
    return clock::now() - t0;
  };
  // A batch long enough (about 0.4 s) that a cancel which waited for it
  // could not pass for a prompt one.
  (void)one_batch(1);     // PoCL compiles the kernel at its first launch
  float rounds = 20'000;  // 20 M steps
  const auto probe = std::chrono::duration<double>(one_batch(rounds)).count();
  rounds = std::min(4e6F, std::max(rounds, static_cast<float>(rounds * 0.4 / std::max(probe, 1e-3))));
  const auto batch = one_batch(rounds);
  for (const bool own_thread : {false, true}) {
    SCOPED_TRACE(own_thread ? "a thread per node" : "pool of 1 worker");
    troupe::actor_system sys{troupe::config{.workers = 1}};
    // Batches of one element: the first is long, the second short; the
    // stage holds after sending the second (no free slot: the first is on
    // the device). A stage that waited for the device there instead would
    // still be in its second consume call when the graph is cancelled.
    stage_log log;
    watched_stage stage{slow, "spin_for", {.size = 1, .in_flight = 2}};
    stage.log = &log;
    const std::vector<float> input{rounds, 0.0F, 0.0F};
    auto g = troupe::spawn_pattern(
        sys,
        troupe::pipeline{st::source([&input, i = std::size_t{0}]() mutable -> std::optional<float> {
                           if (i == input.size()) return std::nullopt;
                           return input[i++];
                         }),
                         stage, st::sink([](float) {})},
        placed(own_thread));
    const auto deadline = clock::now() + 10s;
    while (log.consume_calls.load() < 2 && clock::now() < deadline) std::this_thread::sleep_for(1ms);
    ASSERT_GE(log.consume_calls.load(), 2);
    std::this_thread::sleep_for(20ms);  // holding (parked) by now
    const auto t0 = clock::now();
    g.cancel();
    ASSERT_TRUE(g.wait_for(10s));
    const auto took = clock::now() - t0;
    EXPECT_TRUE(g.cancelled());
    // The device still had most of the first batch to run (about `batch`);
    // the graph did not wait for it.
    EXPECT_LT(took, batch / 2) << "cancel took " << std::chrono::duration<double>(took).count() << " s, a batch "
                               << std::chrono::duration<double>(batch).count() << " s";
    // Leave the device idle for the next test (the batch runs on, its memory
    // held by its completion callback).
    std::this_thread::sleep_for(batch - took);
  }
}
