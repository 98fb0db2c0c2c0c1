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
// stage, and so its producers. The stage never blocks its worker: it is a
// node that waits (stream/node.hpp: waits, hold): where it must wait for the
// device it holds, and the read of each batch, when complete, calls back on
// an OpenCL thread to wake it (one small heap block and one callback per
// batch), so it runs on the pool's workers like any node. At the end of the
// stream it holds until its last batch is back and emitted. A graph that is
// cancelled while batches are on the device ends at once: those batches'
// host memory stays alive with their callbacks until the device is done.
// Each replica of a farm has its own queue and buffers; replicas may share
// a device.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/opencl/device.hpp"
#include "troupe/stream/node.hpp"
#include "troupe/stream/watermark.hpp"

namespace troupe::opencl {

namespace detail {
/// What a device_map batch's completion callback holds: the stage's wake
/// handle, and the batch's host memory, which the device reads and writes
/// until then (the stage may be gone by then: a cancelled graph).
struct batch_landing {
  stream::wake_handle waker;
  std::shared_ptr<void> keep;
};
/// A batch's read is complete: wakes its stage. Runs on an OpenCL thread;
/// frees the landing. A wake after the graph has ended does nothing.
inline void CL_CALLBACK wake_stage(cl_event /*ev*/, cl_int /*status*/, void* user) {
  const std::unique_ptr<batch_landing> d{static_cast<batch_landing*>(user)};
  d->waker.wake();
}
}  // namespace detail

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
  /// The stage waits for the device without blocking its worker: it holds,
  /// and each batch's completion callback wakes it (on_wake).
  static constexpr bool waits = true;

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
    kernel_ = prog_.make_kernel(name_);
    try {
      opt_.local = std::min(opt_.local, prog_.dev().info().max_work_group_size);
      queue_ = detail::make_queue(prog_.dev());
      slots_.resize(opt_.in_flight);
      for (auto& b : slots_) {
        b.mem = std::make_shared<host>();
        b.mem->in.reserve(opt_.size);
        b.dev_in = detail::make_buffer(prog_.dev(), opt_.size * sizeof(In), CL_MEM_READ_ONLY);
        b.dev_out = detail::make_buffer(prog_.dev(), opt_.size * sizeof(Out), CL_MEM_WRITE_ONLY);
      }
    } catch (const opencl_error& e) {
      fail("setting up", e);
    }
  }

  // slots_[cur_] is free whenever the stage does not hold: it holds after a
  // submit that leaves no free batch, until the oldest is back.
  void consume(In& x) {
    auto& b = slots_[cur_];
    auto& in = b.mem->in;
    if (in.empty()) b.first = stream::now();
    in.push_back(x);
    // The clock is read once per 64 elements (a read costs as much as the
    // rest of consume); an input that runs dry is handled by on_idle.
    const auto n = in.size();
    if (n == opt_.size || (n % 64 == 0 && stream::now() - b.first >= delay_ns())) submit();
  }
  void on_idle() { drain(); }
  void on_stop() { drain(); }
  // A batch's callback came, not necessarily the one the stage waits for (a
  // wake may also be left over from a batch emitted since): emits what is
  // back, oldest first, and holds again while what it waits for is not.
  void on_wake() {
    emit_ready(true);
    if (draining_ ? busy_ != 0 : slots_[cur_].busy) {
      this->hold();
      return;
    }
    draining_ = false;
  }

 private:
  // A batch's host memory: the device reads `in` and writes `out` until the
  // batch's read is complete, so its callback shares it.
  struct host {
    std::vector<In> in;
    std::vector<Out> out;
  };
  struct slot {
    std::shared_ptr<host> mem;
    cl::Buffer dev_in, dev_out;
    cl::Event done;  // the read of `out`, the batch's last command
    std::uint64_t first = 0;
    bool busy = false;
  };

  [[noreturn]] void fail(const char* what, const opencl_error& e) {
    throw opencl_error{"device_map '" + name_ + "': " + what + ": " + e.what(), e.code()};
  }

  std::uint64_t delay_ns() const noexcept { return static_cast<std::uint64_t>(opt_.max_delay.count()) * 1000; }

  // Sends the current batch to the device and moves on to the next slot,
  // emitting the batches that are back; holds if that slot is still on the
  // device (no free batch: the oldest is).
  void submit() {
    launch(slots_[cur_]);
    cur_ = (cur_ + 1) % slots_.size();
    emit_ready(false);
    if (slots_[cur_].busy) this->hold();
  }

  // Nothing more is coming for now (on_idle) or ever (on_stop): the partial
  // batch goes, and the stage holds until every batch in flight is back and
  // emitted (the older first).
  void drain() {
    if (!slots_[cur_].mem->in.empty()) {
      launch(slots_[cur_]);
      cur_ = (cur_ + 1) % slots_.size();
    }
    emit_ready(false);
    if (busy_ != 0) {
      draining_ = true;
      this->hold();
    }
  }

  // Enqueues the batch's write, kernel and read, and a callback on the read
  // that wakes the stage.
  void launch(slot& b) {
    auto& m = *b.mem;
    const auto n = m.in.size();
    auto landing = std::make_unique<detail::batch_landing>(detail::batch_landing{this->waker(), b.mem});
    try {
      std::size_t global = n;
      if (opt_.local != 0) global = (n + opt_.local - 1) / opt_.local * opt_.local;
      m.out.resize(n);
      (void)detail::enqueue_write(queue_, b.dev_in, n * sizeof(In), m.in.data());
      const auto count = static_cast<cl_uint>(n);
      detail::set_arg(kernel_, 0, b.dev_in);
      detail::set_arg(kernel_, 1, b.dev_out);
      detail::set_arg(kernel_, 2, sizeof count, &count);
      const std::size_t local = opt_.local;
      (void)detail::enqueue_kernel(
          queue_, kernel_, {}, {&global, 1},
          local != 0 ? std::span<const std::size_t>{&local, 1} : std::span<const std::size_t>{});
      b.done = detail::enqueue_read(queue_, b.dev_out, n * sizeof(Out), m.out.data());
      detail::on_complete(b.done, &detail::wake_stage, landing.get());
      [[maybe_unused]] auto* by_callback = landing.release();  // the callback frees it
      detail::flush(queue_);
    } catch (const opencl_error& e) {
      // What was enqueued of this batch finishes before its memory is
      // reused; the batch is lost with the error.
      settle();
      m.in.clear();
      fail("running a batch", e);
    }
    b.busy = true;
    ++busy_;
  }

  // Emits the batches in flight that are back, oldest first, up to the
  // first that is not. `strict` (on_wake): a batch that failed on the device
  // throws; elsewhere it is left for on_wake, which the failed read's
  // callback brings (and an error thrown from on_wake ends the graph
  // whatever its on_error says).
  void emit_ready(bool strict) {
    for (std::size_t k = 0; k < slots_.size(); ++k) {
      auto& b = slots_[(cur_ + k) % slots_.size()];
      if (!b.busy) continue;  // free slots come before the batches in flight
      if (!back(b, strict)) return;
      emit(b);
    }
  }

  // Whether the batch is back from the device (its read complete).
  bool back(slot& b, bool strict) {
    cl_int status = CL_COMPLETE;
    try {
      status = detail::event_status(b.done);
    } catch (const opencl_error& e) {
      if (strict) fail("waiting for a batch", e);
      return false;
    }
    if (status < 0 && strict)
      throw opencl_error{opencl_errc::kernel_failed,
                         "device_map '" + name_ + "': a batch failed on the device: " + std::string{error_name(status)},
                         status};
    return status == CL_COMPLETE;
  }

  void emit(slot& b) {
    b.busy = false;
    --busy_;
    for (auto& y : b.mem->out) this->send_next(std::move(y));
    b.mem->in.clear();
  }

  // Waits for everything enqueued to finish (a worker's thread, never a
  // completion callback's).
  void settle() noexcept { detail::finish(queue_); }

  program prog_;
  std::string name_;
  batch_options opt_;
  cl::Kernel kernel_;
  cl::CommandQueue queue_;
  std::vector<slot> slots_;
  std::size_t cur_ = 0;    // the batch being filled
  std::size_t busy_ = 0;   // batches on the device
  bool draining_ = false;  // holding until every batch is back (on_idle, on_stop)
};

/// A device stage: see the top of this header.
template <class In, class Out>
device_map_node<In, Out> device_map(program p, std::string kernel, batch_options o = {}) {
  return device_map_node<In, Out>{std::move(p), std::move(kernel), o};
}

}  // namespace troupe::opencl
