// device.hpp: OpenCL devices and programs (the optional troupe::opencl
// module, over the Khronos C++ bindings).
//   auto dev = troupe::opencl::default_device();          // a GPU if there is one, else the first device
//   for (auto& d : troupe::opencl::devices()) std::cout << d.info().name << '\n';
//   auto prog = troupe::opencl::program::build(dev, source, "-cl-fast-relaxed-math");
// A device owns its OpenCL context; a program is built for one device. Both
// are cheap to copy (shared handles) and safe to use from any thread.
// A build failure throws opencl_error carrying the compiler's build log.
// The bindings' error mode is the user's: the module's headers make their
// OpenCL calls through the functions below (compiled into the library, each
// checking the code the C API returns), so they work whether or not the
// including code defines CL_HPP_ENABLE_EXCEPTIONS, and the module does not
// define it for its users.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <CL/opencl.hpp>

#include "troupe/opencl/errors.hpp"
#include "troupe/util/exception.hpp"

namespace troupe::opencl {

/// An OpenCL call failed, a device was not found, or a program did not
/// build. what() names the operation and the OpenCL error (CL_INVALID_...);
/// build_log() holds the compiler's output for a failed build. Also a
/// troupe::exception whose error has the category "opencl" (opencl_errc).
class opencl_error : public std::runtime_error, public troupe::exception {
 public:
  /// The opencl_errc follows from the rest: build_failed with a build log
  /// (or CL_BUILD_PROGRAM_FAILURE), call_failed with another OpenCL code,
  /// else invalid_argument.
  opencl_error(const std::string& what, int code = 0, std::string log = {})
      : opencl_error{code == CL_BUILD_PROGRAM_FAILURE || !log.empty() ? opencl_errc::build_failed
                     : code != 0                                      ? opencl_errc::call_failed
                                                                      : opencl_errc::invalid_argument,
                     what, code, std::move(log)} {}
  opencl_error(opencl_errc kind, const std::string& what, int code = 0, std::string log = {})
      : std::runtime_error{what}, troupe::exception{kind}, code_{code}, log_{std::move(log)} {}
  /// The OpenCL error code (0 when the failure is not an OpenCL call's).
  int code() const noexcept { return code_; }
  const std::string& build_log() const noexcept { return log_; }

 private:
  int code_;
  std::string log_;
};

/// The name of an OpenCL error code ("CL_INVALID_WORK_GROUP_SIZE").
std::string_view error_name(int code) noexcept;

enum class device_type { cpu, gpu, accelerator, other };
std::string_view to_string(device_type t) noexcept;

struct device_info {
  std::string name;
  std::string vendor;
  std::string version;  ///< "OpenCL 3.0 PoCL ..."
  std::string driver_version;
  std::string platform;  ///< the platform's name
  device_type type = device_type::other;
  std::size_t compute_units = 0;
  std::size_t max_work_group_size = 0;
  std::uint64_t global_memory = 0;   ///< bytes
  std::uint64_t local_memory = 0;    ///< bytes
  std::uint64_t max_allocation = 0;  ///< bytes, the largest buffer
  std::size_t index = 0;             ///< position in devices()
};

/// Copies between host and device made by this module since the process
/// started (kernel actors, mem_ref, device_map), counted when enqueued:
/// what a chain of kernel actors passing mem_refs saves shows here.
struct transfer_counts {
  std::uint64_t to_device = 0;
  std::uint64_t to_host = 0;
  std::uint64_t bytes_to_device = 0;
  std::uint64_t bytes_to_host = 0;
};
transfer_counts transfers() noexcept;
/// Device buffers this module has made since the process started (kernel
/// actors' argument buffers, mem_ref::upload, device_map's batches): with
/// buffers reused, it stops growing once an actor has warmed up.
std::uint64_t buffers_created() noexcept;

class device;

namespace detail {
struct device_state;
/// Counts one copy (see transfers()).
void count_transfer(bool to_device, std::size_t bytes) noexcept;

// The OpenCL calls of the module's headers, made in the library with the C
// API. Each throws opencl_error (call_failed) naming the call and the error
// ("clEnqueueNDRangeKernel failed with CL_INVALID_WORK_GROUP_SIZE").
// `waits`: events the command waits for (empty ones are skipped).

/// A new in-order queue of the device.
cl::CommandQueue make_queue(const device& d);
/// A new buffer of `bytes` (counted by buffers_created()).
cl::Buffer make_buffer(const device& d, std::size_t bytes, cl_mem_flags flags = CL_MEM_READ_WRITE);
/// clSetKernelArg: `size` bytes at `value`, or local memory of `size` bytes when `value` is null.
void set_arg(const cl::Kernel& k, std::size_t index, std::size_t size, const void* value);
void set_arg(const cl::Kernel& k, std::size_t index, const cl::Buffer& b);
/// A copy from host memory into `b` (counted by transfers()); returns its event.
cl::Event enqueue_write(const cl::CommandQueue& q, const cl::Buffer& b, std::size_t bytes, const void* src,
                        std::span<const cl::Event> waits = {}, bool blocking = false);
/// A copy from `b` into host memory (counted by transfers()); returns its event.
cl::Event enqueue_read(const cl::CommandQueue& q, const cl::Buffer& b, std::size_t bytes, void* dst,
                       std::span<const cl::Event> waits = {}, bool blocking = false);
/// A launch of `k`: 1 to 3 dimensions; `offset` and `local` empty or of the global's dimensions.
cl::Event enqueue_kernel(const cl::CommandQueue& q, const cl::Kernel& k, std::span<const std::size_t> offset,
                         std::span<const std::size_t> global, std::span<const std::size_t> local,
                         std::span<const cl::Event> waits = {});
/// clSetEventCallback(CL_COMPLETE).
void on_complete(const cl::Event& e, void(CL_CALLBACK* f)(cl_event, cl_int, void*), void* user);
/// clFlush.
void flush(const cl::CommandQueue& q);
/// clFinish; a failure means the queue is broken, and nothing runs on it any more.
void finish(const cl::CommandQueue& q) noexcept;
/// CL_QUEUED .. CL_COMPLETE, or the negative error of a failed command.
int event_status(const cl::Event& e);
/// Blocks until the command of `e` has ended; opencl_error if it failed.
void wait_for(const cl::Event& e);
/// clGetKernelInfo(CL_KERNEL_NUM_ARGS).
std::size_t argument_count(const cl::Kernel& k);
/// Guards what the copies of mem_refs of this device know of the commands
/// that use their buffers (kernel_actor.hpp).
std::mutex& data_mutex(const device& d);
}  // namespace detail

/// A device with its context (and a queue for host transfers).
class device {
 public:
  device() = default;
  const device_info& info() const;
  explicit operator bool() const noexcept { return static_cast<bool>(state_); }
  friend bool operator==(const device& a, const device& b) noexcept { return a.state_ == b.state_; }

  // The OpenCL objects, for code that talks to OpenCL directly.
  const cl::Context& context() const;
  const cl::Device& id() const;
  /// A queue of this device's for host transfers (mem_ref uploads/reads).
  cl::CommandQueue& transfer_queue() const;

  /// Internal: shared by everything made on this device.
  const std::shared_ptr<detail::device_state>& state() const noexcept { return state_; }
  explicit device(std::shared_ptr<detail::device_state> s) noexcept : state_{std::move(s)} {}

 private:
  std::shared_ptr<detail::device_state> state_;
};

/// Every device of every platform, in platform order (the same objects on
/// each call: one context per device per process). Empty if there is no
/// OpenCL platform (no ICD installed).
std::vector<device> devices();
/// The first device of this type; opencl_error if there is none.
device find_device(device_type t);
/// The first device whose name contains `part`; opencl_error if none.
device find_device(std::string_view part);
/// devices()[i]; opencl_error if out of range.
device find_device(std::size_t index);
/// A GPU if there is one, else the first device; opencl_error if none.
device default_device();

/// A program built for one device.
class program {
 public:
  program() = default;
  /// Compiles OpenCL C source; opencl_error with the build log on failure.
  static program build(const device& d, std::string_view source, const std::string& options = {});
  /// Reads the source from a file first (opencl_error naming the file).
  static program from_file(const device& d, const std::string& path, const std::string& options = {});

  const device& dev() const noexcept { return dev_; }
  const cl::Program& handle() const noexcept { return prog_; }
  /// A new kernel object (each user needs its own: arguments are per object).
  /// opencl_error when the program has no kernel of that name.
  cl::Kernel make_kernel(const std::string& name) const;

 private:
  device dev_;
  cl::Program prog_;
};

}  // namespace troupe::opencl
