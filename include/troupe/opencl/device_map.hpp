// device_map.hpp: a stream stage that runs a kernel over batches of its
// input, for pipelines and farms like any node.
//   auto prog = troupe::opencl::program::build(dev, R"(
//     __kernel void score(__global const float* in, __global float* out, uint n) {
//       size_t i = get_global_id(0);
//       if (i < n) out[i] = sqrt(in[i]);
//     })");
//   troupe::pipeline{source, troupe::opencl::device_map<float, float>(prog, "score", {.size = 4096}), sink};
// The kernel takes (__global const In*, __global Out*, uint n) and writes one
// output per input: out[i] for in[i], i < n (the global size is n rounded up
// to a multiple of `local`, so the kernel checks i < n). In and Out are
// trivially copyable; their layout is the kernel's struct layout.
// A batch goes to the device when it holds `size` elements, when its first
// element has waited `max_delay` (checked every 64 elements), or when the
// stage's input runs dry (on_idle: then it also waits for the batches in
// flight and emits them), so a trickle is not held back. Outputs leave in
// input order. Up to `in_flight` batches (2) are on the device at a time:
// while the device works on them, the stage fills the next one (double
// buffering); it waits for the oldest only when it has no free batch. The
// channels' backpressure is unchanged: a full output channel holds the
// stage, and so its producers. The stage blocks while it waits for the
// device, so each replica runs on a thread of its own (needs_own_thread). Each replica of a farm has its own queue and
// buffers; replicas may share a device.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/opencl/device.hpp"
#include "troupe/stream/node.hpp"
#include "troupe/stream/watermark.hpp"

namespace troupe::opencl {

struct batch_options {
  std::size_t size = 4096;                    ///< elements per batch (>= 1)
  std::chrono::microseconds max_delay{2000};  ///< the longest an element waits for its batch to fill
  /// Work-group size (0: the device chooses). A fixed size keeps one
  /// compiled variant of the kernel: PoCL compiles the kernel again for each
  /// new work-group size, and with 0 the size follows each partial batch.
  std::size_t local = 64;
  /// Batches on the device at a time (>= 2): while the device works on
  /// them, the stage fills the next one (2: double buffering).
  std::size_t in_flight = 2;
};

template <class In, class Out>
  requires(std::is_trivially_copyable_v<In> && std::is_trivially_copyable_v<Out>)
class device_map_node : public stream::node<In, Out> {
 public:
  static constexpr const char* kind = "device_map";
  /// The stage waits for the device (clWaitForEvents): it runs on a thread
  /// of its own, so the nodes around it keep their workers (on 2 cores,
  /// 26 -> 45 M floats/s in batches of 4096, medians of 6 processes).
  static constexpr bool needs_own_thread = true;

  device_map_node(program p, std::string kernel, batch_options o)
      : prog_{std::move(p)}, name_{std::move(kernel)}, opt_{o} {
    if (opt_.size == 0) throw opencl_error{"device_map '" + name_ + "': batch size must be at least 1"};
    if (opt_.in_flight < 2) throw opencl_error{"device_map '" + name_ + "': in_flight must be at least 2"};
    (void)prog_.make_kernel(name_);  // throws now, naming the kernel, rather than in every replica
  }
  // Replicas are copies made before on_start: they share no OpenCL object.
  device_map_node(const device_map_node& o) : stream::node<In, Out>{o}, prog_{o.prog_}, name_{o.name_}, opt_{o.opt_} {}
  device_map_node(device_map_node&&) noexcept = default;
  device_map_node& operator=(const device_map_node&) = delete;

  void on_start() {
    try {
      kernel_ = prog_.make_kernel(name_);
      opt_.local = std::min(opt_.local, prog_.dev().info().max_work_group_size);
      queue_ = cl::CommandQueue{prog_.dev().context(), prog_.dev().id()};
      slots_.resize(opt_.in_flight);
      for (auto& b : slots_) {
        b.in.reserve(opt_.size);
        b.dev_in = cl::Buffer{prog_.dev().context(), CL_MEM_READ_ONLY, opt_.size * sizeof(In)};
        b.dev_out = cl::Buffer{prog_.dev().context(), CL_MEM_WRITE_ONLY, opt_.size * sizeof(Out)};
      }
    } catch (const cl::Error& e) {
      fail("setting up", e);
    }
  }

  void consume(In& x) {
    auto& b = slots_[cur_];
    if (b.in.empty()) b.first = stream::now();
    b.in.push_back(x);
    // The clock is read once per 64 elements (a read costs as much as the
    // rest of consume); an input that runs dry is handled by on_idle.
    const auto n = b.in.size();
    if (n == opt_.size || (n % 64 == 0 && stream::now() - b.first >= delay_ns())) submit();
  }
  void on_idle() { drain(); }
  void on_stop() { drain(); }

 private:
  struct slot {
    std::vector<In> in;
    std::vector<Out> out;
    cl::Buffer dev_in, dev_out;
    cl::Event done;
    std::uint64_t first = 0;
    bool busy = false;
  };

  [[noreturn]] void fail(const char* what, const cl::Error& e) {
    throw opencl_error{"device_map '" + name_ + "': " + what + ": " + detail::describe(e), e.err()};
  }

  std::uint64_t delay_ns() const noexcept { return static_cast<std::uint64_t>(opt_.max_delay.count()) * 1000; }

  // Sends the current batch to the device and moves on to the other slot,
  // emitting the batch that was there first (waiting for it if need be).
  void submit() {
    auto& b = slots_[cur_];
    const auto n = b.in.size();
    try {
      std::size_t global = n;
      if (opt_.local != 0) global = (n + opt_.local - 1) / opt_.local * opt_.local;
      b.out.resize(n);
      queue_.enqueueWriteBuffer(b.dev_in, CL_FALSE, 0, n * sizeof(In), b.in.data());
      detail::count_transfer(true, n * sizeof(In));
      kernel_.setArg(0, b.dev_in);
      kernel_.setArg(1, b.dev_out);
      kernel_.setArg(2, static_cast<cl_uint>(n));
      queue_.enqueueNDRangeKernel(kernel_, cl::NullRange, cl::NDRange{global},
                                  opt_.local != 0 ? cl::NDRange{opt_.local} : cl::NullRange);
      queue_.enqueueReadBuffer(b.dev_out, CL_FALSE, 0, n * sizeof(Out), b.out.data(), nullptr, &b.done);
      detail::count_transfer(false, n * sizeof(Out));
      queue_.flush();
    } catch (const cl::Error& e) {
      fail("running a batch", e);
    }
    b.busy = true;
    cur_ = (cur_ + 1) % slots_.size();
    if (slots_[cur_].busy) emit(slots_[cur_]);
  }

  // Nothing more is coming for now: the partial batch goes, and every batch
  // in flight is emitted (the older first).
  void drain() {
    if (!slots_[cur_].in.empty()) submit();
    for (std::size_t k = 0; k < slots_.size(); ++k) {
      auto& b = slots_[(cur_ + k) % slots_.size()];
      if (b.busy) emit(b);
    }
  }

  void emit(slot& b) {
    try {
      b.done.wait();
    } catch (const cl::Error& e) {
      fail("waiting for a batch", e);
    }
    b.busy = false;
    for (auto& y : b.out) this->send_next(std::move(y));
    b.in.clear();
  }

  program prog_;
  std::string name_;
  batch_options opt_;
  cl::Kernel kernel_;
  cl::CommandQueue queue_;
  std::vector<slot> slots_;
  std::size_t cur_ = 0;
};

/// A device stage: see the top of this header.
template <class In, class Out>
device_map_node<In, Out> device_map(program p, std::string kernel, batch_options o = {}) {
  return device_map_node<In, Out>{std::move(p), std::move(kernel), o};
}

}  // namespace troupe::opencl
