// matmul on the OpenCL device: one troupe::opencl kernel actor, and the same
// kernel through the OpenCL C++ bindings alone.
#include "impls.hpp"

#include <troupe/opencl/opencl.hpp>
#include <troupe/troupe.hpp>

#include "common/opencl_support.hpp"

namespace ocl = troupe::opencl;

namespace {

/// One request to a kernel actor, answered within `limit`: C, or an exception.
template <class Handle>
std::vector<float> multiply(troupe::scoped_actor& self, const Handle& mm, std::vector<float> a, std::vector<float> b) {
  std::vector<float> c;
  std::string failure;
  self->request(mm, std::chrono::seconds{100}, std::move(a), std::move(b))
      .receive([&](std::vector<float>& r) { c = std::move(r); },
               [&](troupe::error& e) { failure = "the kernel actor answered: " + e.to_string(); });
  bench::check(failure.empty(), failure);
  return c;
}

}  // namespace

bench::sample bench::run_troupe_opencl(const params& p) {
  const auto n = p.get("n");
  const auto un = static_cast<std::size_t>(n);
  const auto prog = ocl::program::build(opencl_support::device(), matmul::kernel_source);
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::scoped_actor self{sys};
  auto spawn = [&] {
    return ocl::spawn(sys, prog, "matmul", ocl::nd_range{{un}, {}, {matmul::group_rows(un)}}, ocl::in<float>{},
                      ocl::in<float>{}, ocl::out<float>{un * un});
  };
  // Warm-up through another actor: the first launch compiles the kernel.
  (void)multiply(self, spawn(), matmul::a(n), matmul::b(n));
  auto mm = spawn();
  auto a = matmul::a(n), b = matmul::b(n);
  stopwatch sw;
  auto c = multiply(self, mm, std::move(a), std::move(b));
  sample s;
  s.wall_s = sw.seconds();
  matmul::check_product(c, n);
  return s;
}

bench::sample bench::run_opencl_bare(const params& p) {
  const auto n = p.get("n");
  const auto un = static_cast<std::size_t>(n);
  const std::size_t bytes = un * un * sizeof(float);
  opencl_support::bare cl_env{matmul::kernel_source};
  cl::Kernel kernel{cl_env.program, "matmul"};
  const auto a = matmul::a(n), b = matmul::b(n);
  auto run = [&] {
    std::vector<float> c(un * un);
    cl::Buffer da{cl_env.context, CL_MEM_READ_ONLY, bytes}, db{cl_env.context, CL_MEM_READ_ONLY, bytes},
        dc{cl_env.context, CL_MEM_WRITE_ONLY, bytes};
    cl_env.queue.enqueueWriteBuffer(da, CL_FALSE, 0, bytes, a.data());
    cl_env.queue.enqueueWriteBuffer(db, CL_FALSE, 0, bytes, b.data());
    kernel.setArg(0, da);
    kernel.setArg(1, db);
    kernel.setArg(2, dc);
    cl_env.queue.enqueueNDRangeKernel(kernel, cl::NullRange, cl::NDRange{un}, cl::NDRange{matmul::group_rows(un)});
    cl::Event done;
    cl_env.queue.enqueueReadBuffer(dc, CL_FALSE, 0, bytes, c.data(), nullptr, &done);
    done.wait();
    return c;
  };
  (void)run();  // warm-up: the first launch compiles the kernel
  stopwatch sw;
  auto c = run();
  sample s;
  s.wall_s = sw.seconds();
  matmul::check_product(c, n);
  return s;
}
