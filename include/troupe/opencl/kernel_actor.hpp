// kernel_actor.hpp: OpenCL kernels as typed actors.
//   namespace cl = troupe::opencl;
//   auto prog = cl::program::build(cl::default_device(), source);
//   auto vadd = cl::spawn(sys, prog, "vadd", cl::nd_range{{n}},
//                         cl::in<float>{}, cl::in<float>{}, cl::out<float>{});
//   // vadd: typed_actor<std::vector<float>(std::vector<float>, std::vector<float>)>
//   self.request(vadd, 1s, xs, ys).then([](std::vector<float> sum) { ... });
// Each tag names one kernel argument, in order:
//   in<T>          the request carries a std::vector<T>, copied to the device
//   in<T, ref>     the request carries a mem_ref<T> (data already on the device)
//   out<T>         the reply carries a std::vector<T> read back from the device
//   out<T, ref>    the reply carries a mem_ref<T>: the result stays on the device
//   in_out<T, I, O> both (I, O: vec or ref; O defaults to I)
//   scratch<T>     a device buffer the kernel uses; in no message
//   local<T>       local memory (__local T*) of the given element count
//   scalar<T>      a by-value argument, carried by the request
// Sizes of out/scratch/local: the number of work items (default), a fixed
// count, or a function of the launch (launch_info: the range in effect and
// the element count of each request argument). A request whose types do not
// match does not compile; sizes known only at run time (an empty input, a
// local size that does not divide the global one, an enqueue the device
// refuses) are answered with an error, never a crash.
// Optional hooks (kernel(...).preprocess(f).postprocess(g)): f(nd_range&,
// const inputs&...) adjusts the range per request, and may refuse it by
// returning a troupe::error; g(outputs&&...) shapes the reply (and so the
// actor's type).
// What the kernel reads and writes is its own business: OpenCL does not
// check indices. An input smaller than the kernel reads is undefined
// behaviour on the device (a crash on a CPU device); check sizes in a
// preprocess that returns an error.
// Concurrency: the actor has an ordinary mailbox on the scheduler. A request
// is enqueued without blocking (writes, kernel, reads on the actor's own
// in-order queue); the completion callback only posts a message back; at
// most max_in_flight requests run at once, and while that many do, further
// requests wait in the mailbox, where send_if and the soft limit see them.
// Several actors may share a device (each has its own queue and kernel).
// An actor that ends with requests in flight waits for its queue to finish
// (bounded by the kernels' run time) and answers them with an error. When
// the actor system shuts down, the actor gets the grace period of any
// shutdown client (tuning::shutdown_drain_ms, 1 s); after it, the requests
// it has not enqueued are answered with errc::system_shutdown instead of
// being run, and only those on the device are waited for.
// Buffers: each argument has a pool of device buffers; an out<T, ref>
// buffer returns to it when the last copy of its mem_ref goes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/actor/actor_system.hpp"
#include "troupe/actor/event_actor.hpp"
#include "troupe/actor/typed_actor.hpp"
#include "troupe/opencl/device.hpp"

namespace troupe::opencl {

/// The work of one launch: global sizes (1 to 3 dimensions), optional
/// offsets and local (work-group) sizes of the same dimensions.
struct nd_range {
  std::vector<std::size_t> global;
  std::vector<std::size_t> offset{};
  std::vector<std::size_t> local{};

  /// The product of the global sizes.
  std::size_t work_items() const noexcept;
  /// "" if usable; else what is wrong with it, in words.
  std::string problem() const;
};

/// What a size rule sees: the range in effect and, for each argument of the
/// request in order, its element count (vector or mem_ref; 1 for a scalar).
struct launch_info {
  const nd_range& range;
  std::span<const std::size_t> sizes;
};

/// The element count of an out, scratch or local argument.
class size_rule {
 public:
  /// The number of work items of the launch.
  size_rule() = default;
  size_rule(std::size_t n) : n_{n}, fixed_{true} {}  // NOLINT: out<float>{1000}
  template <class F>
    requires std::is_invocable_r_v<std::size_t, F&, const launch_info&>
  size_rule(F f) : f_{std::move(f)} {}  // NOLINT: out<float>{[](const launch_info&) { ... }}
  std::size_t operator()(const launch_info& l) const {
    if (fixed_) return n_;
    if (f_) return f_(l);
    return l.range.work_items();
  }

 private:
  std::function<std::size_t(const launch_info&)> f_;
  std::size_t n_ = 0;
  bool fixed_ = false;
};

namespace detail {
/// What the copies of a mem_ref share (kernel_actor.cpp): the buffer, and
/// the commands that use it. Its functions make the OpenCL calls of mem_ref
/// in the library.
class mem_state;
std::shared_ptr<mem_state> wrap_buffer(device d, cl::Buffer buf, cl::Event ready);
std::shared_ptr<mem_state> upload_bytes(const device& d, const void* data, std::size_t bytes);
void read_bytes(mem_state& s, void* out, std::size_t bytes);
const device& device_of(const mem_state* s) noexcept;
const cl::Buffer& buffer_of(const mem_state* s) noexcept;
cl::Event last_write(const mem_state& s);
struct ref_access;
}  // namespace detail

/// Data on a device: a buffer of `size()` elements. Copies share the buffer
/// and what is known of the commands that use it. Sent to another kernel
/// actor on the same device, the data never comes back to the host: a
/// kernel that reads it (in<T, ref>) waits on the device for the last
/// command that wrote the buffer, through whichever copy it was written
/// (in_out<T, ref>); a kernel that writes it also waits for the commands
/// still reading it. Commands are ordered by when their actors enqueue them.
/// The buffer is freed, or goes back to the pool of the kernel actor that
/// made it (out<T, ref>), when the last copy goes; a buffer back in a pool
/// is reused only after the commands that used it have ended.
template <class T>
class mem_ref {
 public:
  mem_ref() = default;
  /// A buffer of the device holding `n` elements, ready after `ready`
  /// (empty: ready now).
  mem_ref(device d, cl::Buffer buf, std::size_t n, cl::Event ready = {})
      : s_{detail::wrap_buffer(std::move(d), std::move(buf), std::move(ready))}, n_{n} {}
  mem_ref(const mem_ref&) = default;
  mem_ref& operator=(const mem_ref&) = default;
  mem_ref(mem_ref&& o) noexcept : s_{std::move(o.s_)}, n_{std::exchange(o.n_, 0)} {}
  mem_ref& operator=(mem_ref&& o) noexcept {
    s_ = std::move(o.s_);
    n_ = std::exchange(o.n_, 0);
    return *this;
  }
  ~mem_ref() = default;

  std::size_t size() const noexcept { return n_; }
  explicit operator bool() const noexcept { return s_ != nullptr && buffer()() != nullptr; }
  const device& dev() const noexcept { return detail::device_of(s_.get()); }
  const cl::Buffer& buffer() const noexcept { return detail::buffer_of(s_.get()); }
  /// The event of the last command that wrote the data, as the copies know
  /// it now; empty when the data was ready when the reference was made and
  /// nothing has written it since.
  cl::Event ready() const { return s_ ? detail::last_write(*s_) : cl::Event{}; }

  /// A copy on the host. Blocks the calling thread until the data is ready
  /// and read: for CPU actors that need the values, not for kernel chains.
  std::vector<T> to_host() const {
    std::vector<T> out(n_);
    if (n_ != 0) detail::read_bytes(*s_, out.data(), n_ * sizeof(T));
    return out;
  }
  /// A new device buffer holding `data` (blocks until copied).
  static mem_ref upload(const device& d, const std::vector<T>& data) {
    if (data.empty()) throw opencl_error{"mem_ref::upload: empty data (OpenCL buffers cannot be empty)"};
    return mem_ref{detail::upload_bytes(d, data.data(), data.size() * sizeof(T)), data.size()};
  }

 private:
  friend struct detail::ref_access;
  mem_ref(std::shared_ptr<detail::mem_state> s, std::size_t n) : s_{std::move(s)}, n_{n} {}

  std::shared_ptr<detail::mem_state> s_;
  std::size_t n_ = 0;
};

namespace detail {
/// The kernel actor's way into mem_ref.
struct ref_access {
  template <class T>
  static const std::shared_ptr<mem_state>& state(const mem_ref<T>& r) noexcept {
    return r.s_;
  }
  template <class T>
  static mem_ref<T> make(std::shared_ptr<mem_state> s, std::size_t n) {
    return mem_ref<T>{std::move(s), n};
  }
};
}  // namespace detail

/// Where an argument's data is in messages: a host vector or a mem_ref.
struct vec {};
struct ref {};

namespace detail {
enum class arg_kind { in, out, in_out, scratch, local, scalar };
template <class T, class Where>
using carried = std::conditional_t<std::is_same_v<Where, ref>, mem_ref<T>, std::vector<T>>;
template <class W>
concept where = std::is_same_v<W, vec> || std::is_same_v<W, ref>;
}  // namespace detail

template <class T, detail::where Where = vec>
struct in {
  static constexpr detail::arg_kind kind = detail::arg_kind::in;
  using value_type = T;
  using input = detail::carried<T, Where>;
  using output = void;
};
template <class T, detail::where Where = vec>
struct out {
  static constexpr detail::arg_kind kind = detail::arg_kind::out;
  using value_type = T;
  using input = void;
  using output = detail::carried<T, Where>;
  size_rule size{};
};
template <class T, detail::where In = vec, detail::where Out = In>
struct in_out {
  static constexpr detail::arg_kind kind = detail::arg_kind::in_out;
  using value_type = T;
  using input = detail::carried<T, In>;
  using output = detail::carried<T, Out>;
};
template <class T>
struct scratch {
  static constexpr detail::arg_kind kind = detail::arg_kind::scratch;
  using value_type = T;
  using input = void;
  using output = void;
  size_rule size{};
};
template <class T>
struct local {
  static constexpr detail::arg_kind kind = detail::arg_kind::local;
  using value_type = T;
  using input = void;
  using output = void;
  size_rule size{};
};
template <class T>
  requires std::is_trivially_copyable_v<T>
struct scalar {
  static constexpr detail::arg_kind kind = detail::arg_kind::scalar;
  using value_type = T;
  using input = T;
  using output = void;
};

/// No pre- or post-processing.
struct no_hook {};

/// What to spawn: a kernel of a program over a range, with optional hooks.
template <class Pre = no_hook, class Post = no_hook>
struct kernel_spec {
  program prog;
  std::string name;
  nd_range range;
  Pre pre{};
  Post post{};
  std::size_t in_flight = 4;  ///< requests enqueued at once (>= 1)

  /// f(nd_range&, const inputs&...) -> void or troupe::error: the range of
  /// each request (an error refuses it).
  template <class F>
  kernel_spec<F, Post> preprocess(F f) const {
    return {prog, name, range, std::move(f), post, in_flight};
  }
  /// g(outputs&&...) -> R: the reply becomes R.
  template <class G>
  kernel_spec<Pre, G> postprocess(G g) const {
    return {prog, name, range, pre, std::move(g), in_flight};
  }
  kernel_spec max_in_flight(std::size_t n) const {
    auto s = *this;
    s.in_flight = n;
    return s;
  }
};

inline kernel_spec<> kernel(program p, std::string name, nd_range range) {
  return {std::move(p), std::move(name), std::move(range)};
}

namespace detail {

/// Shared by a kernel actor, its completion callbacks, which may run after
/// the actor has ended (then `target` is null and they do nothing), and the
/// actor system, whose shutdown it hears of (kernel_actor.cpp).
struct kernel_link;
/// Posts kernel_done to the linked actor, if it still runs (callback thread).
void complete(kernel_link& l, std::uint64_t id, int status) noexcept;
/// Each argument's free device buffers, shared by a kernel actor and the
/// mem_refs it hands out (kernel_actor.cpp).
class buffer_pool;

/// What a kernel actor is made of, checked before it is spawned (throws
/// opencl_error): the kernel object and the actor's own queue.
struct kernel_parts {
  device dev;
  cl::Kernel kernel;
  cl::CommandQueue queue;
  std::size_t in_flight;
};
kernel_parts make_parts(const program& p, const std::string& name, const nd_range& range, std::size_t tags,
                        std::size_t in_flight);

/// The urgent message a completion posts to its actor (id 0: the actor
/// system is shutting down).
struct kernel_done {
  std::uint64_t id;
  int status;  ///< CL_COMPLETE, or the negative error of a failed command
};

/// The untyped part of every kernel actor: queue, kernel object, the
/// in-flight bound (its intake gate), completion callbacks, buffer reuse,
/// and every OpenCL call of a request (compiled into the library).
class kernel_actor_base : public gated_actor {
 public:
  ~kernel_actor_base() override;

 protected:
  kernel_actor_base(kernel_parts parts, std::size_t tags);

  /// The actor system is shutting down: requests are answered with
  /// shutdown_error() instead of being enqueued.
  bool stopping() const noexcept;
  static troupe::error shutdown_error();

  // One request, from begin() to end() (or abort() when it fails part way).
  // Each call may throw opencl_error.

  /// `refs`: the request passes mem_refs, whose bookkeeping stays locked
  /// (for every actor of the device) until end() or abort().
  void begin(bool refs);
  /// A buffer of at least `bytes` for argument `arg`, from its pool when
  /// one is free (the request then waits for the commands that still used
  /// it), else new.
  cl::Buffer take_buffer(std::size_t arg, std::size_t bytes);
  /// Copies `bytes` from `src` (alive until the request ends) into `b`.
  void write(const cl::Buffer& b, std::size_t bytes, const void* src);
  void set_buffer(std::size_t arg, const cl::Buffer& b);
  void set_local(std::size_t arg, std::size_t bytes);
  void set_value(std::size_t arg, std::size_t size, const void* value);
  /// A mem_ref argument: the kernel waits for the buffer's last write and,
  /// if it writes the buffer, for the commands reading it.
  void use_ref(std::size_t arg, mem_state& s, bool writes);
  void run(const nd_range& r);
  /// After run(): copies `bytes` of `b` into `dst` (alive until the request ends).
  void read(const cl::Buffer& b, std::size_t bytes, void* dst);
  /// After run(): the kernel read, or wrote, a mem_ref's buffer.
  void read_ref(mem_state& s);
  void wrote_ref(mem_state& s);
  /// After run(): copies a mem_ref's buffer into `dst`, as a reader.
  void read_ref_back(mem_state& s, std::size_t bytes, void* dst);
  /// After run(): the data of a mem_ref for argument `arg`'s buffer, which
  /// the kernel wrote; the buffer returns to the pool when the last copy goes.
  std::shared_ptr<mem_state> hand_out(std::size_t arg, cl::Buffer b);
  /// The request is enqueued: its completion will post kernel_done{id}
  /// (one more in flight). Returns the id.
  std::uint64_t end();
  /// The request failed part way: unlocks, and waits for what it enqueued
  /// to finish (its host memory may then be freed). Its buffers are freed,
  /// not pooled: commands of other queues may still use them.
  void abort() noexcept;

  /// A kernel_done message was handled.
  void heard_completion() noexcept { ++completed_; }
  /// A request left the device: one fewer in flight.
  void request_done() noexcept { --in_flight_; }
  void give_buffer(std::size_t arg, cl::Buffer b) noexcept;
  void on_exit() noexcept override;
  /// Answers every request still in flight (on_exit).
  virtual void abandon_all() noexcept = 0;

  device dev_;

 private:
  bool open() const noexcept override { return in_flight_ < max_in_flight_ || stopping(); }
  bool park() noexcept override;
  friend void complete(kernel_link& l, std::uint64_t id, int status) noexcept;

  cl::Kernel kernel_;
  cl::CommandQueue queue_;
  std::shared_ptr<kernel_link> link_;
  std::shared_ptr<buffer_pool> pool_;
  std::size_t in_flight_ = 0;
  std::size_t max_in_flight_;
  std::uint64_t completed_ = 0;
  std::uint64_t next_id_ = 0;
  // The request being enqueued.
  std::vector<cl::Event> waits_;  // the kernel's wait list
  std::vector<cl::Event> taken_;  // what the last buffer taken still waits for
  cl::Event kernel_event_;
  cl::Event last_;  // its last command
  std::unique_lock<std::mutex> refs_;
  bool enqueued_ = false;
};

/// The failure of an OpenCL call, as an error for a reply.
troupe::error kernel_error(opencl_errc code, const std::string& what);

template <class R, class Inputs>
struct sig_of;
template <class R, class... Is>
struct sig_of<R, std::tuple<Is...>> {
  using type = R(Is...);
};

template <class T>
using opt_tuple = std::conditional_t<std::is_void_v<T>, std::tuple<>, std::tuple<T>>;

template <class... Tags>
using inputs_of = decltype(std::tuple_cat(std::declval<opt_tuple<typename Tags::input>>()...));
template <class... Tags>
using outputs_of = decltype(std::tuple_cat(std::declval<opt_tuple<typename Tags::output>>()...));

/// Position of each tag's request argument (or output) among the inputs (outputs).
template <bool Outputs, class... Tags>
constexpr std::array<std::size_t, sizeof...(Tags)> positions() {
  std::array<std::size_t, sizeof...(Tags)> at{};
  std::size_t k = 0, i = 0;
  ((at[i++] =
        (std::is_void_v<std::conditional_t<Outputs, typename Tags::output, typename Tags::input>> ? SIZE_MAX : k++)),
   ...);
  return at;
}

template <class Post, class Outs>
struct reply_of;
template <class Post, class... Os>
struct reply_of<Post, std::tuple<Os...>> {
  using type = std::invoke_result_t<Post&, Os&&...>;
};
template <class O>
struct reply_of<no_hook, std::tuple<O>> {
  using type = O;
};
template <class... Os>
  requires(sizeof...(Os) != 1)
struct reply_of<no_hook, std::tuple<Os...>> {
  using type = std::tuple<Os...>;
};

template <class Tag>
inline constexpr bool ref_input = std::is_same_v<typename Tag::input, mem_ref<typename Tag::value_type>>;
template <class Tag>
inline constexpr bool ref_output = std::is_same_v<typename Tag::output, mem_ref<typename Tag::value_type>>;

/// Per argument of one request: its buffer and host data.
template <class Tag>
struct slot {
  using T = typename Tag::value_type;
  std::vector<T> host;              // in (kept alive for the write), out / in_out (read target)
  std::shared_ptr<mem_state> data;  // a mem_ref's: the request's (in, in_out) or the reply's (out)
  cl::Buffer buf;                   // the argument's buffer from the pool (not a mem_ref's)
  std::size_t n = 0;                // elements
  bool pooled = false;
};

template <class Pre, class Post, class... Tags>
class kernel_actor final : public kernel_actor_base {
  using inputs = inputs_of<Tags...>;
  using outputs = outputs_of<Tags...>;
  static_assert(std::tuple_size_v<outputs> > 0,
                "troupe::opencl::spawn: a kernel actor needs an out or in_out argument");
  static constexpr auto in_at = positions<false, Tags...>();
  static constexpr auto out_at = positions<true, Tags...>();
  static constexpr bool passes_refs = (ref_input<Tags> || ...);
  using reply_type = typename reply_of<Post, outputs>::type;

 public:
  using signature = typename sig_of<reply_type, inputs>::type;
  using handle_type = typed_actor<signature>;

  kernel_actor(kernel_parts parts, const kernel_spec<Pre, Post>& spec, std::tuple<Tags...> tags)
      : kernel_actor_base{std::move(parts), sizeof...(Tags)},
        range_{spec.range},
        pre_{spec.pre},
        post_{spec.post},
        tags_{std::move(tags)} {}

 protected:
  behavior make_behavior() override { return request_handler(static_cast<inputs*>(nullptr)); }

 private:
  struct command {
    std::uint64_t id = 0;
    bool done = false;  // its completion has arrived
    int status = 0;     // CL_COMPLETE or the failure, once done
    response_promise promise;
    std::tuple<slot<Tags>...> slots;
  };

  template <class... Is>
  behavior request_handler(std::tuple<Is...>*) {
    return behavior{[this](Is&... xs) -> response_promise {
                      auto rp = make_response_promise();
                      launch(rp, std::forward_as_tuple(xs...), std::index_sequence_for<Tags...>{});
                      return rp;
                    },
                    [this](kernel_done d) { finish(d); }};
  }

  template <class Args, std::size_t... I>
  void launch(response_promise& rp, Args args, std::index_sequence<I...>) {
    if (stopping()) {
      rp.deliver(shutdown_error());
      return;
    }
    nd_range r = range_;
    if constexpr (!std::is_same_v<Pre, no_hook>) {
      // A preprocess that returns an error refuses the request with it.
      auto run_pre = [&] { return std::apply([&](auto&... xs) { return pre_(r, std::as_const(xs)...); }, args); };
      using R = decltype(run_pre());
      if constexpr (std::is_same_v<R, troupe::error>) {
        if (auto e = run_pre()) {
          rp.deliver(std::move(e));
          return;
        }
      } else {
        static_assert(std::is_void_v<R>, "troupe::opencl: a preprocess returns void or troupe::error");
        run_pre();
      }
    }
    if (auto p = r.problem(); !p.empty()) {
      rp.deliver(kernel_error(opencl_errc::invalid_argument, "bad nd_range: " + p));
      return;
    }
    std::array<std::size_t, std::tuple_size_v<inputs> + 1> sizes{};
    std::apply(
        [&](auto&... xs) {
          std::size_t k = 0;
          ((sizes[k++] = element_count(xs)), ...);
        },
        args);
    const launch_info info{r, std::span<const std::size_t>{sizes.data(), std::tuple_size_v<inputs>}};
    auto cmd = std::make_unique<command>();
    try {
      begin(passes_refs);
      std::string bad;
      ((bad.empty() ? void(bad = prepare<I>(*cmd, args, info)) : void()), ...);
      if (!bad.empty()) {
        abort();
        rp.deliver(kernel_error(opencl_errc::invalid_argument, bad));
        return;
      }
      run(r);
      (collect<I>(*cmd), ...);
      cmd->id = end();
      cmd->promise = std::move(rp);
      commands_.push_back(std::move(cmd));
    } catch (const opencl_error& e) {
      abort();
      rp.deliver(kernel_error(opencl_errc::call_failed, std::string{"enqueueing the kernel: "} + e.what()));
    }
  }

  template <class X>
  static std::size_t element_count(const X& x) {
    if constexpr (requires { x.size(); }) return x.size();
    else return 1;
  }

  /// Argument I before the launch: buffer, writes, kernel argument. Returns
  /// "" or what is wrong with the request.
  template <std::size_t I, class Args>
  std::string prepare(command& c, Args& args, const launch_info& info) {
    using Tag = std::tuple_element_t<I, std::tuple<Tags...>>;
    using T = typename Tag::value_type;
    auto& s = std::get<I>(c.slots);
    const auto& tag = std::get<I>(tags_);
    const std::string which = "argument " + std::to_string(I);
    constexpr auto kind = Tag::kind;
    if constexpr (kind == arg_kind::scalar) {
      const T& v = std::get<in_at[I]>(args);
      set_value(I, sizeof(T), &v);
    } else if constexpr (kind == arg_kind::local) {
      const auto n = tag.size(info);
      if (n == 0) return which + " (local): the size rule gave 0 elements";
      set_local(I, n * sizeof(T));
    } else if constexpr (kind == arg_kind::scratch || kind == arg_kind::out) {
      const auto n = tag.size(info);
      if (n == 0) return which + ": the size rule gave 0 elements";
      s.buf = take_buffer(I, n * sizeof(T));
      s.pooled = true;
      s.n = n;
      set_buffer(I, s.buf);
    } else {  // in, in_out: from the request
      auto& x = std::get<in_at[I]>(args);
      if constexpr (ref_input<Tag>) {
        if (!x) return which + ": an empty mem_ref";
        if (!(x.dev() == dev_)) return which + ": a mem_ref of another device (" + x.dev().info().name + ")";
        s.data = ref_access::state(x);
        s.n = x.size();
        use_ref(I, *s.data, kind == arg_kind::in_out);
      } else {
        if (x.empty()) return which + ": an empty vector (OpenCL buffers cannot be empty)";
        s.host = std::move(x);
        s.n = s.host.size();
        s.buf = take_buffer(I, s.n * sizeof(T));
        s.pooled = true;
        write(s.buf, s.n * sizeof(T), s.host.data());
        set_buffer(I, s.buf);
      }
    }
    return {};
  }

  /// Argument I after the launch: reads back host outputs, makes mem_refs,
  /// and notes what the kernel did to the mem_refs it was given.
  template <std::size_t I>
  void collect(command& c) {
    using Tag = std::tuple_element_t<I, std::tuple<Tags...>>;
    using T = typename Tag::value_type;
    auto& s = std::get<I>(c.slots);
    const std::size_t bytes = s.n * sizeof(T);
    if constexpr (ref_input<Tag>) {
      if constexpr (Tag::kind == arg_kind::in_out) {
        wrote_ref(*s.data);
        if constexpr (!ref_output<Tag>) {
          s.host.resize(s.n);
          read_ref_back(*s.data, bytes, s.host.data());
        }
      } else {
        read_ref(*s.data);
      }
    } else if constexpr (ref_output<Tag>) {  // out<T, ref>, in_out<T, vec, ref>
      s.data = hand_out(I, std::move(s.buf));
      s.pooled = false;  // the mem_ref's copies have it now
    } else if constexpr (!std::is_void_v<typename Tag::output>) {
      s.host.resize(s.n);
      read(s.buf, bytes, s.host.data());
    }
  }

  // Completion callbacks may run in any order (PoCL calls them from several
  // of its threads). A request is answered once its own completion has
  // arrived and every older request has been answered: replies keep the
  // order of the requests. (Reading an older request's event status instead
  // of waiting for its callback trusts the runtime to mark events complete
  // in queue order before it runs later commands' callbacks; the OpenCL
  // specification does not promise that.)
  void finish(kernel_done d) {
    heard_completion();
    if (d.id == 0) return;  // the system is shutting down: open() now lets every request in
    bool found = false;
    for (auto& cmd : commands_) {
      if (cmd->id == d.id && !cmd->done) {
        cmd->done = true;
        cmd->status = d.status;
        found = true;
        break;
      }
    }
    request_done();  // off the device (or a launch that failed after end()): the gate may open
    if (!found) return;
    while (!commands_.empty() && commands_.front()->done) {
      auto cmd = std::move(commands_.front());
      commands_.pop_front();
      answer(*cmd, cmd->status);
    }
  }

  void answer(command& c, int status) {
    give_back(c, std::index_sequence_for<Tags...>{});
    if (status < 0) {
      c.promise.deliver(kernel_error(opencl_errc::kernel_failed, "the kernel or a transfer failed on the device: " +
                                                                     std::string{error_name(status)}));
      return;
    }
    auto outs = take_outputs(c, std::index_sequence_for<Tags...>{});
    if constexpr (!std::is_same_v<Post, no_hook>) {
      c.promise.deliver(std::apply([this](auto&&... os) { return post_(std::move(os)...); }, std::move(outs)));
    } else {
      std::apply([&](auto&&... os) { c.promise.deliver(std::move(os)...); }, std::move(outs));
    }
  }

  template <std::size_t... I>
  outputs take_outputs(command& c, std::index_sequence<I...>) {
    return std::tuple_cat(output_of<I>(c)...);
  }
  template <std::size_t I>
  auto output_of(command& c) {
    using Tag = std::tuple_element_t<I, std::tuple<Tags...>>;
    using O = typename Tag::output;
    auto& s = std::get<I>(c.slots);
    if constexpr (std::is_void_v<O>) return std::tuple<>{};
    else if constexpr (ref_output<Tag>)
      return std::tuple<O>{ref_access::make<typename Tag::value_type>(std::move(s.data), s.n)};
    else return std::tuple<O>{std::move(s.host)};
  }
  template <std::size_t... I>
  void give_back(command& c, std::index_sequence<I...>) {
    ((std::get<I>(c.slots).pooled ? give_buffer(I, std::move(std::get<I>(c.slots).buf)) : void()), ...);
  }

  void abandon_all() noexcept override {
    for (auto& cmd : commands_)
      cmd->promise.deliver(
          troupe::error{errc::actor_exited, "opencl: the kernel actor ended with this request in flight"});
    commands_.clear();
  }

  nd_range range_;
  Pre pre_;
  Post post_;
  std::tuple<Tags...> tags_;
  std::deque<std::unique_ptr<command>> commands_;  // in flight, oldest first
};

}  // namespace detail

/// The typed handle of a kernel actor spawned with these tags and hooks.
template <class Pre, class Post, class... Tags>
using kernel_handle = typename detail::kernel_actor<Pre, Post, Tags...>::handle_type;

/// Spawns a kernel actor. Throws opencl_error when the program has no such
/// kernel, the kernel takes a different number of arguments than there are
/// tags, the range is malformed, or max_in_flight is 0.
template <class Pre, class Post, class... Tags>
kernel_handle<Pre, Post, Tags...> spawn(actor_system& sys, const kernel_spec<Pre, Post>& spec, Tags... tags) {
  using A = detail::kernel_actor<Pre, Post, Tags...>;
  auto parts = detail::make_parts(spec.prog, spec.name, spec.range, sizeof...(Tags), spec.in_flight);
  return kernel_handle<Pre, Post, Tags...>{
      sys.spawn<A>(std::move(parts), spec, std::tuple<Tags...>{std::move(tags)...})};
}
template <class... Tags>
  requires(sizeof...(Tags) > 0)
kernel_handle<no_hook, no_hook, Tags...> spawn(actor_system& sys, const program& p, std::string name, nd_range range,
                                               Tags... tags) {
  return opencl::spawn(sys, kernel(p, std::move(name), std::move(range)), std::move(tags)...);
}

}  // namespace troupe::opencl
