// Shared OpenCL set-up of the benchmarks built on troupe::opencl (matmul,
// kernel_round_trip, device_stage): the device their troupe implementations
// use, and the bare OpenCL objects of their `opencl_bare` baselines, made
// with the Khronos C++ bindings alone (no troupe code), on the same device.
// Only include this from translation units linked with troupe::opencl (it
// brings the bindings' OpenCL 1.2 definitions) and compiled with
// CL_HPP_ENABLE_EXCEPTIONS (the benchmarks' targets define it).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <troupe/opencl/device.hpp>

#include "common/harness.hpp"

namespace bench::opencl_support {

/// troupe::opencl's default device (a GPU if there is one, else the first
/// device); not_available (the run is skipped) when there is no OpenCL
/// platform or device.
inline troupe::opencl::device device() {
  if (troupe::opencl::devices().empty()) throw not_available("no OpenCL device (scripts/setup installs PoCL)");
  return troupe::opencl::default_device();
}

/// Context, in-order queue and built program for the bare baselines, on the
/// device default_device() picks: the first GPU of the first platform that
/// has one, else the first device of the first platform that has any.
struct bare {
  cl::Device dev;
  cl::Context context;
  cl::CommandQueue queue;
  cl::Program program;

  explicit bare(const std::string& source) {
    std::vector<cl::Platform> platforms;
    try {
      cl::Platform::get(&platforms);
    } catch (const cl::Error&) {
      platforms.clear();  // no ICD: CL_PLATFORM_NOT_FOUND_KHR
    }
    auto first_of = [&platforms](cl_device_type type) {
      for (auto& p : platforms) {
        std::vector<cl::Device> ds;
        try {
          p.getDevices(type, &ds);
        } catch (const cl::Error&) {
          continue;  // CL_DEVICE_NOT_FOUND
        }
        if (!ds.empty()) return ds.front();
      }
      return cl::Device{};
    };
    dev = first_of(CL_DEVICE_TYPE_GPU);
    if (dev() == nullptr) dev = first_of(CL_DEVICE_TYPE_ALL);
    if (dev() == nullptr) throw not_available("no OpenCL device (scripts/setup installs PoCL)");
    context = cl::Context{dev};
    queue = cl::CommandQueue{context, dev};
    program = cl::Program{context, source};
    try {
      program.build(std::vector<cl::Device>{dev});
    } catch (const cl::Error&) {
      throw std::runtime_error("the benchmark's kernel did not build: " +
                               program.getBuildInfo<CL_PROGRAM_BUILD_LOG>(dev));
    }
  }
};

}  // namespace bench::opencl_support
