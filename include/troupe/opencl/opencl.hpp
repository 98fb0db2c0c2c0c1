// opencl.hpp: the troupe::opencl module (link troupe::opencl): devices and
// programs (device.hpp), kernel actors (kernel_actor.hpp), device stages in
// stream graphs (device_map.hpp). See docs/opencl.md.
#pragma once

#include "troupe/opencl/device.hpp"
#include "troupe/opencl/device_map.hpp"
#include "troupe/opencl/kernel_actor.hpp"
