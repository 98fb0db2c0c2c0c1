// device.cpp: platforms, devices, contexts and program builds, and the
// OpenCL calls of the module's headers. Everything here calls the OpenCL C
// API and checks the code it returns; the C++ bindings' classes only own
// the handles. So the library does not depend on the bindings' error mode
// (CL_HPP_ENABLE_EXCEPTIONS), which the user's code picks.
#include "troupe/opencl/device.hpp"

#include <array>
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
  std::mutex data;  // see data_mutex()
};
}  // namespace detail

namespace {
std::atomic<std::uint64_t> to_device_count{0}, to_host_count{0}, to_device_bytes{0}, to_host_bytes{0};
std::atomic<std::uint64_t> buffer_count{0};

/// Throws opencl_error "<what>: <call> failed with CL_..." unless `code` is CL_SUCCESS.
void check(cl_int code, const char* call, const std::string& what = {}) {
  if (code == CL_SUCCESS) return;
  throw opencl_error{
      (what.empty() ? std::string{} : what + ": ") + call + " failed with " + std::string{error_name(code)}, code};
}

/// A wait list for the C API: the non-empty events of `waits` (the
/// bindings' cl::Event holds nothing but its cl_event).
class wait_list {
 public:
  explicit wait_list(std::span<const cl::Event> waits) {
    static_assert(sizeof(cl::Event) == sizeof(cl_event));
    cl_event* out = waits.size() <= small_.size() ? small_.data() : (big_.resize(waits.size()), big_.data());
    for (const auto& e : waits)
      if (e() != nullptr) out[n_++] = e();
    data_ = n_ == 0 ? nullptr : out;
  }
  cl_uint size() const noexcept { return n_; }
  const cl_event* data() const noexcept { return data_; }

 private:
  std::array<cl_event, 8> small_{};
  std::vector<cl_event> big_;
  const cl_event* data_ = nullptr;
  cl_uint n_ = 0;
};

/// 1 to 3 sizes, or none (null).
const std::size_t* sizes_or_null(std::span<const std::size_t> v) { return v.empty() ? nullptr : v.data(); }
}  // namespace

void detail::count_transfer(bool to_device, std::size_t bytes) noexcept {
  (to_device ? to_device_count : to_host_count).fetch_add(1, std::memory_order_relaxed);
  (to_device ? to_device_bytes : to_host_bytes).fetch_add(bytes, std::memory_order_relaxed);
}

transfer_counts transfers() noexcept {
  return {to_device_count.load(std::memory_order_relaxed), to_host_count.load(std::memory_order_relaxed),
          to_device_bytes.load(std::memory_order_relaxed), to_host_bytes.load(std::memory_order_relaxed)};
}

std::uint64_t buffers_created() noexcept { return buffer_count.load(std::memory_order_relaxed); }

cl::CommandQueue detail::make_queue(const device& d) {
  cl_int err = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueue(d.context()(), d.id()(), 0, &err);
  check(err, "clCreateCommandQueue");
  return cl::CommandQueue{q};
}

cl::Buffer detail::make_buffer(const device& d, std::size_t bytes, cl_mem_flags flags) {
  cl_int err = CL_SUCCESS;
  cl_mem b = clCreateBuffer(d.context()(), flags, bytes, nullptr, &err);
  check(err, "clCreateBuffer");
  buffer_count.fetch_add(1, std::memory_order_relaxed);
  return cl::Buffer{b};
}

void detail::set_arg(const cl::Kernel& k, std::size_t index, std::size_t size, const void* value) {
  check(clSetKernelArg(k(), static_cast<cl_uint>(index), size, value), "clSetKernelArg");
}

void detail::set_arg(const cl::Kernel& k, std::size_t index, const cl::Buffer& b) {
  const cl_mem m = b();
  set_arg(k, index, sizeof(cl_mem), static_cast<const void*>(&m));
}

cl::Event detail::enqueue_write(const cl::CommandQueue& q, const cl::Buffer& b, std::size_t bytes, const void* src,
                                std::span<const cl::Event> waits, bool blocking) {
  const wait_list w{waits};
  cl_event e = nullptr;
  check(clEnqueueWriteBuffer(q(), b(), blocking ? CL_TRUE : CL_FALSE, 0, bytes, src, w.size(), w.data(), &e),
        "clEnqueueWriteBuffer");
  count_transfer(true, bytes);
  return cl::Event{e};
}

cl::Event detail::enqueue_read(const cl::CommandQueue& q, const cl::Buffer& b, std::size_t bytes, void* dst,
                               std::span<const cl::Event> waits, bool blocking) {
  const wait_list w{waits};
  cl_event e = nullptr;
  check(clEnqueueReadBuffer(q(), b(), blocking ? CL_TRUE : CL_FALSE, 0, bytes, dst, w.size(), w.data(), &e),
        "clEnqueueReadBuffer");
  count_transfer(false, bytes);
  return cl::Event{e};
}

cl::Event detail::enqueue_kernel(const cl::CommandQueue& q, const cl::Kernel& k, std::span<const std::size_t> offset,
                                 std::span<const std::size_t> global, std::span<const std::size_t> local,
                                 std::span<const cl::Event> waits) {
  const wait_list w{waits};
  cl_event e = nullptr;
  check(clEnqueueNDRangeKernel(q(), k(), static_cast<cl_uint>(global.size()), sizes_or_null(offset), global.data(),
                               sizes_or_null(local), w.size(), w.data(), &e),
        "clEnqueueNDRangeKernel");
  return cl::Event{e};
}

void detail::on_complete(const cl::Event& e, void(CL_CALLBACK* f)(cl_event, cl_int, void*), void* user) {
  check(clSetEventCallback(e(), CL_COMPLETE, f, user), "clSetEventCallback");
}

void detail::flush(const cl::CommandQueue& q) { check(clFlush(q()), "clFlush"); }

void detail::finish(const cl::CommandQueue& q) noexcept { (void)clFinish(q()); }

int detail::event_status(const cl::Event& e) {
  cl_int status = CL_COMPLETE;
  check(clGetEventInfo(e(), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr), "clGetEventInfo");
  return status;
}

void detail::wait_for(const cl::Event& e) {
  const cl_event ev = e();
  check(clWaitForEvents(1, &ev), "clWaitForEvents");
  const int status = event_status(e);
  if (status < 0)
    throw opencl_error{opencl_errc::kernel_failed, "a command failed on the device: " + std::string{error_name(status)},
                       status};
}

std::size_t detail::argument_count(const cl::Kernel& k) {
  cl_uint n = 0;
  check(clGetKernelInfo(k(), CL_KERNEL_NUM_ARGS, sizeof n, &n, nullptr), "clGetKernelInfo");
  return n;
}

std::mutex& detail::data_mutex(const device& d) {
  if (!d.state()) throw opencl_error{"empty troupe::opencl::device (use devices() or find_device())"};
  return d.state()->data;
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

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  std::size_t n = 0;
  check(clGetPlatformInfo(p, what, 0, nullptr, &n), "clGetPlatformInfo");
  std::string s(n, '\0');
  check(clGetPlatformInfo(p, what, n, s.data(), nullptr), "clGetPlatformInfo");
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  std::size_t n = 0;
  check(clGetDeviceInfo(d, what, 0, nullptr, &n), "clGetDeviceInfo");
  std::string s(n, '\0');
  check(clGetDeviceInfo(d, what, n, s.data(), nullptr), "clGetDeviceInfo");
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  check(clGetDeviceInfo(d, what, sizeof v, &v, nullptr), "clGetDeviceInfo");
  return v;
}

std::shared_ptr<detail::device_state> make_state(cl_platform_id p, cl_device_id d, std::size_t index) {
  auto s = std::make_shared<detail::device_state>();
  s->dev = cl::Device{d};
  auto& i = s->info;
  i.name = device_string(d, CL_DEVICE_NAME);
  i.vendor = device_string(d, CL_DEVICE_VENDOR);
  i.version = device_string(d, CL_DEVICE_VERSION);
  i.driver_version = device_string(d, CL_DRIVER_VERSION);
  i.platform = platform_string(p, CL_PLATFORM_NAME);
  const auto t = device_value<cl_device_type>(d, CL_DEVICE_TYPE);
  i.type = (t & CL_DEVICE_TYPE_GPU)           ? device_type::gpu
           : (t & CL_DEVICE_TYPE_CPU)         ? device_type::cpu
           : (t & CL_DEVICE_TYPE_ACCELERATOR) ? device_type::accelerator
                                              : device_type::other;
  i.compute_units = device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
  i.max_work_group_size = device_value<std::size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  i.global_memory = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  i.local_memory = device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE);
  i.max_allocation = device_value<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  i.index = index;
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(nullptr, 1, &d, nullptr, nullptr, &err);
  check(err, "clCreateContext");
  s->ctx = cl::Context{ctx};
  cl_command_queue q = clCreateCommandQueue(ctx, d, 0, &err);
  check(err, "clCreateCommandQueue");
  s->transfers = cl::CommandQueue{q};
  return s;
}

// One context per device per process: kernels, buffers and mem_refs of
// actors on the same device can then be combined freely.
std::vector<device> enumerate() {
  std::vector<device> out;
  cl_uint n = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &n);
  if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && n == 0)) return out;  // no ICD: no devices
  check(err, "clGetPlatformIDs", "listing OpenCL platforms");
  std::vector<cl_platform_id> platforms(n);
  check(clGetPlatformIDs(n, platforms.data(), nullptr), "clGetPlatformIDs", "listing OpenCL platforms");
  for (auto p : platforms) {
    cl_uint k = 0;
    err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &k);
    if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && k == 0)) continue;
    check(err, "clGetDeviceIDs", "listing the devices of an OpenCL platform");
    std::vector<cl_device_id> ds(k);
    check(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, k, ds.data(), nullptr), "clGetDeviceIDs",
          "listing the devices of an OpenCL platform");
    for (auto d : ds) {
      try {
        out.emplace_back(make_state(p, d, out.size()));
      } catch (const opencl_error& e) {
        throw opencl_error{std::string{"opening an OpenCL device: "} + e.what(), e.code()};
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
  const char* text = source.data();
  const std::size_t length = source.size();
  cl_int err = CL_SUCCESS;
  cl_program prog = clCreateProgramWithSource(d.context()(), 1, &text, &length, &err);
  check(err, "clCreateProgramWithSource", "creating an OpenCL program");
  p.prog_ = cl::Program{prog};
  cl_device_id id = d.id()();
  err = clBuildProgram(prog, 1, &id, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string log;
    std::size_t n = 0;
    if (clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) == CL_SUCCESS && n > 0) {
      log.resize(n);
      if (clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr) != CL_SUCCESS) log.clear();
      while (!log.empty() && log.back() == '\0') log.pop_back();
    }
    throw opencl_error{
        "OpenCL program did not build for " + d.info().name + " (" + std::string{error_name(err)} + "):\n" + log, err,
        log};
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
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(prog_(), name.c_str(), &err);
  if (err != CL_SUCCESS)
    throw opencl_error{"the program has no kernel '" + name + "' (" + std::string{error_name(err)} + ")", err};
  return cl::Kernel{k};
}

}  // namespace troupe::opencl
