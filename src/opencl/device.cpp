// device.cpp: platforms, devices, contexts and program builds.
#include "troupe/opencl/device.hpp"

#include <atomic>
#include <fstream>
#include <mutex>
#include <sstream>

namespace troupe::opencl {

namespace detail {
struct device_state {
  device_info info;
  cl::Device dev;
  cl::Context ctx;
  cl::CommandQueue transfers;
};
}  // namespace detail

namespace {
std::atomic<std::uint64_t> to_device_count{0}, to_host_count{0}, to_device_bytes{0}, to_host_bytes{0};
}  // namespace

void detail::count_transfer(bool to_device, std::size_t bytes) noexcept {
  (to_device ? to_device_count : to_host_count).fetch_add(1, std::memory_order_relaxed);
  (to_device ? to_device_bytes : to_host_bytes).fetch_add(bytes, std::memory_order_relaxed);
}

std::string detail::describe(const cl::Error& e) {
  return std::string{e.what()} + " failed with " + std::string{error_name(e.err())};
}

transfer_counts transfers() noexcept {
  return {to_device_count.load(std::memory_order_relaxed), to_host_count.load(std::memory_order_relaxed),
          to_device_bytes.load(std::memory_order_relaxed), to_host_bytes.load(std::memory_order_relaxed)};
}

std::string_view error_name(int code) noexcept {
  switch (code) {
#define TROUPE_CL_ERROR(x) \
  case x:                  \
    return #x;
    TROUPE_CL_ERROR(CL_SUCCESS)
    TROUPE_CL_ERROR(CL_DEVICE_NOT_FOUND)
    TROUPE_CL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    TROUPE_CL_ERROR(CL_COMPILER_NOT_AVAILABLE)
    TROUPE_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    TROUPE_CL_ERROR(CL_OUT_OF_RESOURCES)
    TROUPE_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    TROUPE_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE)
    TROUPE_CL_ERROR(CL_MEM_COPY_OVERLAP)
    TROUPE_CL_ERROR(CL_IMAGE_FORMAT_MISMATCH)
    TROUPE_CL_ERROR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    TROUPE_CL_ERROR(CL_BUILD_PROGRAM_FAILURE)
    TROUPE_CL_ERROR(CL_MAP_FAILURE)
    TROUPE_CL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    TROUPE_CL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    TROUPE_CL_ERROR(CL_COMPILE_PROGRAM_FAILURE)
    TROUPE_CL_ERROR(CL_LINKER_NOT_AVAILABLE)
    TROUPE_CL_ERROR(CL_LINK_PROGRAM_FAILURE)
    TROUPE_CL_ERROR(CL_DEVICE_PARTITION_FAILED)
    TROUPE_CL_ERROR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
    TROUPE_CL_ERROR(CL_INVALID_VALUE)
    TROUPE_CL_ERROR(CL_INVALID_DEVICE_TYPE)
    TROUPE_CL_ERROR(CL_INVALID_PLATFORM)
    TROUPE_CL_ERROR(CL_INVALID_DEVICE)
    TROUPE_CL_ERROR(CL_INVALID_CONTEXT)
    TROUPE_CL_ERROR(CL_INVALID_QUEUE_PROPERTIES)
    TROUPE_CL_ERROR(CL_INVALID_COMMAND_QUEUE)
    TROUPE_CL_ERROR(CL_INVALID_HOST_PTR)
    TROUPE_CL_ERROR(CL_INVALID_MEM_OBJECT)
    TROUPE_CL_ERROR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    TROUPE_CL_ERROR(CL_INVALID_IMAGE_SIZE)
    TROUPE_CL_ERROR(CL_INVALID_SAMPLER)
    TROUPE_CL_ERROR(CL_INVALID_BINARY)
    TROUPE_CL_ERROR(CL_INVALID_BUILD_OPTIONS)
    TROUPE_CL_ERROR(CL_INVALID_PROGRAM)
    TROUPE_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE)
    TROUPE_CL_ERROR(CL_INVALID_KERNEL_NAME)
    TROUPE_CL_ERROR(CL_INVALID_KERNEL_DEFINITION)
    TROUPE_CL_ERROR(CL_INVALID_KERNEL)
    TROUPE_CL_ERROR(CL_INVALID_ARG_INDEX)
    TROUPE_CL_ERROR(CL_INVALID_ARG_VALUE)
    TROUPE_CL_ERROR(CL_INVALID_ARG_SIZE)
    TROUPE_CL_ERROR(CL_INVALID_KERNEL_ARGS)
    TROUPE_CL_ERROR(CL_INVALID_WORK_DIMENSION)
    TROUPE_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE)
    TROUPE_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE)
    TROUPE_CL_ERROR(CL_INVALID_GLOBAL_OFFSET)
    TROUPE_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
    TROUPE_CL_ERROR(CL_INVALID_EVENT)
    TROUPE_CL_ERROR(CL_INVALID_OPERATION)
    TROUPE_CL_ERROR(CL_INVALID_GL_OBJECT)
    TROUPE_CL_ERROR(CL_INVALID_BUFFER_SIZE)
    TROUPE_CL_ERROR(CL_INVALID_MIP_LEVEL)
    TROUPE_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE)
    TROUPE_CL_ERROR(CL_INVALID_PROPERTY)
    TROUPE_CL_ERROR(CL_INVALID_IMAGE_DESCRIPTOR)
    TROUPE_CL_ERROR(CL_INVALID_COMPILER_OPTIONS)
    TROUPE_CL_ERROR(CL_INVALID_LINKER_OPTIONS)
    TROUPE_CL_ERROR(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef TROUPE_CL_ERROR
    default:
      return "CL_UNKNOWN_ERROR";
  }
}

std::string_view to_string(device_type t) noexcept {
  switch (t) {
    case device_type::cpu:
      return "cpu";
    case device_type::gpu:
      return "gpu";
    case device_type::accelerator:
      return "accelerator";
    default:
      return "other";
  }
}

namespace {

[[noreturn]] void rethrow(const cl::Error& e, const std::string& what) {
  throw opencl_error{what + ": " + detail::describe(e), e.err()};
}

std::shared_ptr<detail::device_state> make_state(const cl::Platform& p, const cl::Device& d, std::size_t index) {
  auto s = std::make_shared<detail::device_state>();
  s->dev = d;
  auto& i = s->info;
  i.name = d.getInfo<CL_DEVICE_NAME>();
  i.vendor = d.getInfo<CL_DEVICE_VENDOR>();
  i.version = d.getInfo<CL_DEVICE_VERSION>();
  i.driver_version = d.getInfo<CL_DRIVER_VERSION>();
  i.platform = p.getInfo<CL_PLATFORM_NAME>();
  const auto t = d.getInfo<CL_DEVICE_TYPE>();
  i.type = (t & CL_DEVICE_TYPE_GPU)           ? device_type::gpu
           : (t & CL_DEVICE_TYPE_CPU)         ? device_type::cpu
           : (t & CL_DEVICE_TYPE_ACCELERATOR) ? device_type::accelerator
                                              : device_type::other;
  i.compute_units = d.getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>();
  i.max_work_group_size = d.getInfo<CL_DEVICE_MAX_WORK_GROUP_SIZE>();
  i.global_memory = d.getInfo<CL_DEVICE_GLOBAL_MEM_SIZE>();
  i.local_memory = d.getInfo<CL_DEVICE_LOCAL_MEM_SIZE>();
  i.max_allocation = d.getInfo<CL_DEVICE_MAX_MEM_ALLOC_SIZE>();
  i.index = index;
  s->ctx = cl::Context{d};
  s->transfers = cl::CommandQueue{s->ctx, d};
  return s;
}

// One context per device per process: kernels, buffers and mem_refs of
// actors on the same device can then be combined freely.
std::vector<device> enumerate() {
  std::vector<device> out;
  std::vector<cl::Platform> platforms;
  try {
    cl::Platform::get(&platforms);
  } catch (const cl::Error& e) {
    if (e.err() == CL_PLATFORM_NOT_FOUND_KHR) return out;  // no ICD: no devices
    rethrow(e, "listing OpenCL platforms");
  }
  for (auto& p : platforms) {
    std::vector<cl::Device> ds;
    try {
      p.getDevices(CL_DEVICE_TYPE_ALL, &ds);
    } catch (const cl::Error& e) {
      if (e.err() == CL_DEVICE_NOT_FOUND) continue;
      rethrow(e, "listing the devices of an OpenCL platform");
    }
    for (auto& d : ds) {
      try {
        out.emplace_back(make_state(p, d, out.size()));
      } catch (const cl::Error& e) {
        rethrow(e, "opening an OpenCL device");
      }
    }
  }
  return out;
}

}  // namespace

std::vector<device> devices() {
  static std::mutex mtx;
  static std::vector<device> cache;
  static bool done = false;
  std::lock_guard<std::mutex> guard{mtx};
  if (!done) {
    cache = enumerate();
    done = true;
  }
  return cache;
}

device find_device(device_type t) {
  for (auto& d : devices())
    if (d.info().type == t) return d;
  throw opencl_error{opencl_errc::no_device, "no OpenCL device of type " + std::string{to_string(t)}};
}

device find_device(std::string_view part) {
  for (auto& d : devices())
    if (d.info().name.find(part) != std::string::npos) return d;
  throw opencl_error{opencl_errc::no_device, "no OpenCL device whose name contains '" + std::string{part} + "'"};
}

device find_device(std::size_t index) {
  auto all = devices();
  if (index >= all.size())
    throw opencl_error{opencl_errc::no_device, "no OpenCL device number " + std::to_string(index) + " (there are " +
                                                   std::to_string(all.size()) + ")"};
  return all[index];
}

device default_device() {
  auto all = devices();
  if (all.empty())
    throw opencl_error{opencl_errc::no_device,
                       "no OpenCL device: no platform is installed (on Debian: apt install pocl-opencl-icd)"};
  for (auto& d : all)
    if (d.info().type == device_type::gpu) return d;
  return all.front();
}

namespace {
const detail::device_state& checked(const std::shared_ptr<detail::device_state>& s) {
  if (!s) throw opencl_error{"empty troupe::opencl::device (use devices() or find_device())"};
  return *s;
}
}  // namespace

const device_info& device::info() const { return checked(state_).info; }
const cl::Context& device::context() const { return checked(state_).ctx; }
const cl::Device& device::id() const { return checked(state_).dev; }
cl::CommandQueue& device::transfer_queue() const {
  return const_cast<detail::device_state&>(checked(state_)).transfers;
}

program program::build(const device& d, std::string_view source, const std::string& options) {
  program p;
  p.dev_ = d;
  try {
    p.prog_ = cl::Program{d.context(), std::string{source}};
  } catch (const cl::Error& e) {
    rethrow(e, "creating an OpenCL program");
  }
  try {
    p.prog_.build(std::vector<cl::Device>{d.id()}, options.c_str());
  } catch (const cl::BuildError& e) {
    std::string log;
    for (auto& [dev, text] : e.getBuildLog()) log += text;
    throw opencl_error{
        "OpenCL program did not build for " + d.info().name + " (" + std::string{error_name(e.err())} + "):\n" + log,
        e.err(), log};
  } catch (const cl::Error& e) {
    rethrow(e, "building an OpenCL program");
  }
  return p;
}

program program::from_file(const device& d, const std::string& path, const std::string& options) {
  std::ifstream in{path};
  if (!in) throw opencl_error{"cannot read OpenCL source file '" + path + "'"};
  std::ostringstream text;
  text << in.rdbuf();
  return build(d, text.str(), options);
}

cl::Kernel program::make_kernel(const std::string& name) const {
  if (!prog_()) throw opencl_error{"kernel '" + name + "' of an empty program"};
  try {
    return cl::Kernel{prog_, name.c_str()};
  } catch (const cl::Error& e) {
    throw opencl_error{"the program has no kernel '" + name + "' (" + std::string{error_name(e.err())} + ")", e.err()};
  }
}

}  // namespace troupe::opencl
