// kernel_round_trip, opencl_bare and opencl_bare_callback: the OpenCL C++
// bindings alone, one set of buffers for every round trip; the host waits
// for the read with clWaitForEvents, or with a completion callback that
// wakes it through a condition variable (as the kernel actor learns of
// completions).
#include "impls.hpp"

#include <condition_variable>
#include <mutex>

#include "common/opencl_support.hpp"

namespace {

/// What the completion callback signals.
struct completion {
  std::mutex mtx;
  std::condition_variable cv;
  bool done = false;
  cl_int status = CL_COMPLETE;
};

void CL_CALLBACK on_complete(cl_event, cl_int status, void* user) {
  auto& c = *static_cast<completion*>(user);
  {
    std::lock_guard<std::mutex> guard{c.mtx};
    c.done = true;
    c.status = status;
  }
  c.cv.notify_one();
}

bench::sample run(const bench::params& p, bool callback) {
  using namespace bench;
  const auto round_trips = p.get("round_trips"), warmup = p.get("warmup"), elements = p.get("elements");
  const auto n = static_cast<std::size_t>(elements);
  const std::size_t bytes = n * sizeof(float);
  opencl_support::bare env{kernel_round_trip::kernel_source};
  cl::Kernel kernel{env.program, "vadd"};
  const auto a = kernel_round_trip::a(elements), b = kernel_round_trip::b(elements);
  auto host_a = a;
  std::vector<float> c(n);
  cl::Buffer da{env.context, CL_MEM_READ_ONLY, bytes}, db{env.context, CL_MEM_READ_ONLY, bytes},
      dc{env.context, CL_MEM_WRITE_ONLY, bytes};
  kernel.setArg(0, da);
  kernel.setArg(1, db);
  kernel.setArg(2, dc);
  completion signal;
  auto round_trip = [&](std::int64_t r, bool full) {
    host_a[0] = static_cast<float>(r);
    env.queue.enqueueWriteBuffer(da, CL_FALSE, 0, bytes, host_a.data());
    env.queue.enqueueWriteBuffer(db, CL_FALSE, 0, bytes, b.data());
    env.queue.enqueueNDRangeKernel(kernel, cl::NullRange, cl::NDRange{n}, cl::NullRange);
    cl::Event read;
    env.queue.enqueueReadBuffer(dc, CL_FALSE, 0, bytes, c.data(), nullptr, &read);
    if (callback) {
      signal.done = false;
      read.setCallback(CL_COMPLETE, &on_complete, &signal);
      env.queue.flush();
      std::unique_lock<std::mutex> lock{signal.mtx};
      signal.cv.wait(lock, [&] { return signal.done; });
      check(signal.status == CL_COMPLETE, "round trip " + std::to_string(r) + ": the read failed");
    } else {
      read.wait();
    }
    kernel_round_trip::check_answer(c, a, b, r, full);
  };
  for (std::int64_t r = 0; r < warmup; ++r) round_trip(r, false);
  std::vector<std::int64_t> ns;
  ns.reserve(static_cast<std::size_t>(round_trips));
  stopwatch sw;
  auto t_prev = std::chrono::steady_clock::now();
  for (std::int64_t r = warmup; r < warmup + round_trips; ++r) {
    round_trip(r, r + 1 == warmup + round_trips);
    const auto t = std::chrono::steady_clock::now();
    ns.push_back(kernel_round_trip::since_ns(t_prev, t));
    t_prev = t;
  }
  sample s;
  s.wall_s = sw.seconds();
  add_latency_percentiles(s, ns);
  return s;
}

}  // namespace

bench::sample bench::run_opencl_bare(const params& p) { return run(p, false); }
bench::sample bench::run_opencl_bare_callback(const params& p) { return run(p, true); }
