// node.hpp: stream operators.
//   struct doubler : troupe::stream::node<int, int> {
//     void consume(int& x) { send_next(2 * x); }   // zero, one or many outputs per input
//     void on_start() {}                            // optional
//     void on_stop() {}                             // optional, may still send
//   };
// A source is a node<void, Out> with `bool produce()` (false: the stream has
// ended); a sink is a node<In, void>. Each replica gets its own copy of the
// node object, so its members are its private state (no locks needed).
//
// send_next(v) never drops: when the destination channel is full, v waits in
// the node's outlet and the node takes no more input until it has moved on
// (backpressure). send_next_if(v, limit) sends only if the destination holds
// fewer than `limit` elements (round robin and random farms: any replica
// that does) and says whether it sent; v is moved from only if it was.
// send_all(v) sends a copy to every replica of the next stage (punctuations).
// A source that is ahead of its schedule calls pause_until(t) in produce().
// A node that batches defines on_idle(), called when its input runs dry.
// A node that waits for something outside the graph (a device, a socket)
// without blocking its worker declares `static constexpr bool waits = true;`
// and calls hold() instead of waiting: the runner takes no more input (input
// waits in the channels, so producers are held back as by a full one) until
// waker().wake() is called, from any thread (a device's completion
// callback); then it calls on_wake(), which may hold() again. on_idle and
// on_stop may hold too: the stream's end waits until the node lets go.
// From on_start on, a node knows replica_index(), replica_count() and the
// actor system it runs on (system()), and keyed<K, V>(name) gives it state
// by key that checkpoints save (stream/keyed_state.hpp).
//
// Watermarks (event time; stream/watermark.hpp): a node whose input carries
// them (event_time()) sees its input watermark in watermark() and may define
// on_watermark(w), called when it advances; its outputs carry the same
// watermark, after what it emitted until then. A node that declares
// `static constexpr bool emits_watermarks = true;` generates its own with
// emit_watermark(t) instead.
//
// Lambda forms, for operators without state beyond a callable:
//   stream::source([i = 0]() mutable -> std::optional<int> { ... })  // nullopt ends
//   stream::map([](int x) { return x * 2; })
//   stream::filter([](const int& x) { return x % 2 == 0; })
//   stream::flat_map<std::string>([](std::string& line, stream::emitter<std::string>& out) { ... })
//   stream::sink([](const int& x) { ... })
//   stream::to_actor<int>(a)                                           // each element to an actor
// For generic lambdas, name the input type: stream::map<int>([](auto x) { ... }).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "troupe/actor/behavior.hpp"
#include "troupe/detail/actor_cell.hpp"
#include "troupe/detail/outlet.hpp"
#include "troupe/stream/keyed_state.hpp"

namespace troupe {
class actor_system;
}

namespace troupe::detail {
template <class Out, class Outlet>
class tagger;
class runner_base;
class runner_waker;
struct node_access;
}  // namespace troupe::detail

namespace troupe::stream {

/// What a node emits with.
template <class Out>
class emitter {
 public:
  // Always inline, as emit_target::send is: out of line, GCC's choice
  // once send grew (the items-out count of the metrics' consistent cut),
  // send_next cost 10 more instructions per element in a chain (pipeline3
  // as one chain: 55.4 -> 65.4).
  [[gnu::always_inline]] void send_next(Out&& v) { out_->send(std::move(v)); }
  [[gnu::always_inline]] void send_next(const Out& v) { out_->send(Out{v}); }
  [[nodiscard]] bool send_next_if(Out&& v, std::size_t limit) { return out_->send_if(v, limit); }
  [[nodiscard]] bool send_next_if(Out& v, std::size_t limit) { return out_->send_if(v, limit); }
  /// A copy to every replica of the next stage (of every branch), whatever
  /// its routing: punctuations such as watermarks or end-of-minute markers.
  void send_all(Out&& v) { out_->send_all(std::move(v)); }
  void send_all(const Out& v) { out_->send_all(Out{v}); }
  /// Sources: produce() is not called again before stream::now() reaches
  /// `t` (a paced source); on the pool its worker runs other work meanwhile,
  /// and a timer brings it back.
  void pause_until(std::uint64_t t) noexcept {
    resume_at_ = t;
    if (halt_ != nullptr) *halt_ = 1;  // the runner's loop stops after this element
  }
  /// Punctuated watermark: every element this node sends from now on has a
  /// time of at least `t` (stream/watermark.hpp); a value not above the last
  /// one is ignored. Only for nodes that declare
  /// `static constexpr bool emits_watermarks = true;` (else std::logic_error).
  void emit_watermark(std::uint64_t t) {
    if (!emits_watermarks_)
      throw std::logic_error{
          "troupe stream: emit_watermark() from a node that does not declare "
          "`static constexpr bool emits_watermarks = true;`"};
    out_->watermark(t);
  }

 private:
  friend struct troupe::detail::node_access;
  troupe::detail::emit_target<Out>* out_ = nullptr;
  std::uint64_t resume_at_ = 0;
  std::size_t* halt_ = nullptr;  // a source's count of elements left in its batch (runner.hpp, produce)
  bool emits_watermarks_ = false;
};
template <>
class emitter<void> {};

/// Wakes a node that holds (node::hold): any thread may call wake(), as
/// often as it likes; a wake after the graph has ended does nothing.
class wake_handle {
 public:
  wake_handle() = default;
  void wake() const noexcept;
  explicit operator bool() const noexcept { return w_ != nullptr; }

 private:
  friend struct troupe::detail::node_access;
  std::shared_ptr<troupe::detail::runner_waker> w_;
};

/// Where a node replica runs; valid from on_start on.
struct node_context {
  actor_system* system = nullptr;
  std::size_t replica = 0;              ///< index among its stage's replicas
  std::size_t replicas = 1;             ///< replicas of its stage
  bool event_time = false;              ///< watermarks reach its input (a stage before it generates them)
  detail::keyed_home* keyed = nullptr;  ///< its keyed states (keyed())
  bool checkpoints = false;             ///< its graph takes checkpoints
  bool final_commit = false;            ///< and a last one at a clean end, heard after on_stop
};

/// Base of every stream operator. In = void: a source; Out = void: a sink.
template <class In, class Out>
class node : public emitter<Out> {
 public:
  using in_type = In;
  using out_type = Out;
  using node_tag = void;

  void on_start() {}
  void on_stop() {}
  /// Optional: the input watermark has advanced to `w` (every element still
  /// to come has a time of at least w); what it sends goes before the
  /// watermark. Called between elements, never with a lower value.
  void on_watermark(std::uint64_t /*w*/) {}
  /// Optional: nothing is queued for this node now (it is about to wait
  /// for input). A node that collects elements into batches sends what it
  /// holds, so a trickle is not held back. Never called while input waits.
  void on_idle() {}
  /// Optional, for a node that declares `static constexpr bool waits =
  /// true;`: its waker() was woken while it held (see the top of this header).
  void on_wake() {}

  /// A node that waits (`waits = true`): after the current call, take no
  /// more input until waker() is woken, then call on_wake().
  void hold() {
    if (!waker_)
      throw std::logic_error{
          "troupe stream: hold() from a node that does not declare `static constexpr bool waits = true;`"};
    held_ = true;
  }
  /// What wakes a node that holds (valid from on_start on; empty unless
  /// the node declares `waits = true`).
  const wake_handle& waker() const noexcept { return waker_; }

  /// Which replica of its stage this node is (0 .. replica_count() - 1).
  std::size_t replica_index() const noexcept { return ctx_.replica; }
  std::size_t replica_count() const noexcept { return ctx_.replicas; }
  /// The actor system the graph runs on (to send to actors, run a map, ...).
  actor_system& system() const noexcept { return *ctx_.system; }
  /// The keyed state `name` of this replica (stream/keyed_state.hpp), from
  /// on_start on: empty at first, or as the checkpoint the graph resumed
  /// from saved it. Ask in on_start and keep the reference.
  template <class K, class V, class H = std::hash<K>>
  keyed_state<K, V, H>& keyed(std::string_view name) {
    if (ctx_.keyed == nullptr) throw std::logic_error{"troupe stream: keyed() before on_start"};
    return ctx_.keyed->template get<K, V, H>(name);
  }
  /// Whether watermarks reach this node's input: a stage before it generates
  /// them (known from on_start on).
  bool event_time() const noexcept { return ctx_.event_time; }
  /// Whether the graph takes checkpoints (stream/checkpoint.hpp): a sink
  /// that commits with them knows whether to wait for one.
  bool checkpointing() const noexcept { return ctx_.checkpoints; }
  /// Whether, at a clean end, the graph takes a last checkpoint whose
  /// on_checkpoint_complete comes after on_stop (one process: yes; a graph
  /// split across processes: no, commit at on_stop).
  bool hears_final_checkpoint() const noexcept { return ctx_.final_commit; }
  /// The input watermark: the minimum over the input channels that have not
  /// ended of the watermark each carries (0: none yet).
  std::uint64_t watermark() const noexcept { return watermark_; }

 private:
  friend struct troupe::detail::node_access;
  node_context ctx_;
  std::uint64_t watermark_ = 0;
  wake_handle waker_;
  bool held_ = false;
};

namespace detail {
/// Whether node N defines on_idle (the base's does nothing).
template <class N>
inline constexpr bool defines_on_idle =
    !std::is_same_v<decltype(&N::on_idle), decltype(&node<typename N::in_type, typename N::out_type>::on_idle)>;

template <class F>
using first_arg = std::decay_t<std::tuple_element_t<0, typename troupe::detail::callable_traits<F>::args>>;

/// f(x) with x moved when f takes it by value or rvalue.
template <class F, class T>
decltype(auto) call_with(F& f, T& x) {
  if constexpr (std::is_invocable_v<F&, T&&>) return std::invoke(f, std::move(x));
  else return std::invoke(f, x);
}
}  // namespace detail

template <class F, class Out>
class source_node : public node<void, Out> {
 public:
  static constexpr const char* kind = "source";
  explicit source_node(F f) : f_{std::move(f)} {}
  bool produce() {
    std::optional<Out> v = f_();
    if (!v) return false;
    this->send_next(std::move(*v));
    return true;
  }

 private:
  F f_;
};

template <class F, class In, class Out>
class map_node : public node<In, Out> {
 public:
  static constexpr const char* kind = "map";
  explicit map_node(F f) : f_{std::move(f)} {}
  void consume(In& x) { this->send_next(detail::call_with(f_, x)); }

 private:
  F f_;
};

template <class F, class T>
class filter_node : public node<T, T> {
 public:
  static constexpr const char* kind = "filter";
  explicit filter_node(F f) : f_{std::move(f)} {}
  void consume(T& x) {
    if (std::invoke(f_, std::as_const(x))) this->send_next(std::move(x));
  }

 private:
  F f_;
};

template <class F, class In, class Out>
class flat_map_node : public node<In, Out> {
 public:
  static constexpr const char* kind = "flat_map";
  explicit flat_map_node(F f) : f_{std::move(f)} {}
  void consume(In& x) { std::invoke(f_, x, static_cast<emitter<Out>&>(*this)); }

 private:
  F f_;
};

template <class F, class In>
class sink_node : public node<In, void> {
 public:
  static constexpr const char* kind = "sink";
  explicit sink_node(F f) : f_{std::move(f)} {}
  void consume(In& x) { detail::call_with(f_, x); }
  /// The callable (after the graph has finished, through a shared state).
  F& function() noexcept { return f_; }

 private:
  F f_;
};

template <class F>
auto source(F f) {
  using opt = std::decay_t<std::invoke_result_t<F&>>;
  return source_node<F, typename opt::value_type>{std::move(f)};
}
template <class In, class F>
auto map(F f) {
  using out = std::decay_t<decltype(detail::call_with(f, std::declval<In&>()))>;
  return map_node<F, In, out>{std::move(f)};
}
template <class F>
auto map(F f) {
  return map<detail::first_arg<F>>(std::move(f));
}
template <class T, class F>
auto filter(F f) {
  return filter_node<F, T>{std::move(f)};
}
template <class F>
auto filter(F f) {
  return filter<detail::first_arg<F>>(std::move(f));
}
/// f(In&, emitter<Out>&) emits any number of outputs per input.
template <class Out, class F>
auto flat_map(F f) {
  return flat_map_node<F, detail::first_arg<F>, Out>{std::move(f)};
}
template <class In, class F>
auto sink(F f) {
  return sink_node<F, In>{std::move(f)};
}
template <class F>
auto sink(F f) {
  return sink<detail::first_arg<F>>(std::move(f));
}

/// A sink that sends each element to `a` as a message.
template <class T>
class to_actor_node : public node<T, void> {
 public:
  static constexpr const char* kind = "to_actor";
  explicit to_actor_node(actor a) : a_{std::move(a)} {}
  void consume(T& v) { actor_cell::deliver(a_, troupe::detail::make_message(actor{}, 0, std::move(v))); }

 private:
  actor a_;
};
template <class T>
auto to_actor(actor a) {
  return to_actor_node<T>{std::move(a)};
}

}  // namespace troupe::stream
