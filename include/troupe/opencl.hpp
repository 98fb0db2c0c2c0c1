// opencl.hpp: the troupe::opencl module in one include: OpenCL devices and
// programs (device.hpp), kernels as typed actors (kernel_actor.hpp) and
// kernel stages in stream graphs (device_map.hpp).
//   for (auto& d : troupe::opencl::devices()) std::cout << d.info().name << '\n';
// Link troupe::opencl (find_package(troupe REQUIRED COMPONENTS opencl)); it
// needs OpenCL and its C++ bindings. See docs/opencl.md.
#pragma once

#include "troupe/opencl/device.hpp"
#include "troupe/opencl/device_map.hpp"
#include "troupe/opencl/kernel_actor.hpp"
#include "troupe/opencl/opencl.hpp"
