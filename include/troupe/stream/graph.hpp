// graph.hpp: spawning a stream graph and talking to it.
//   namespace st = troupe::stream;
//   auto g = troupe::spawn_pattern(sys, troupe::pipeline{
//       st::source([i = 0]() mutable -> std::optional<int> { if (i == 100) return std::nullopt; return i++; }),
//       troupe::farm{st::map([](int x) { return x * x; }), 4},
//       st::sink([&](int x) { total += x; })});
//   g.wait();   // end of stream reached every node; rethrows a node's exception
//
// A graph whose first stage takes input (no source) has an entry actor:
// any actor sends it elements (`self.send(g, x)`, or `g.entry()`), and
// `stream::end_of_stream{}` (or g.close(), or dropping every handle to the
// entry) ends its input. A graph whose last stage emits delivers each
// element to `options.results_to` as a message.
//
// End of stream: a source's produce() returning false (or the entry
// closing) drains every channel downstream; each node's on_stop runs after
// its last input and may still send; then its outputs close. An exception in
// any node cancels the graph: every node stops, queued elements are dropped,
// and wait() rethrows the exception (options.notify also receives
// stream::completed with its message). cancel() does the same without an error.
//
// Placement: nodes run on the actor system's workers by default (any number
// of nodes on any number of workers, one included); options.placement =
// placement::threads, or wrapping part of a pattern in stream::dedicated{p,
// "<0> <1>"}, gives each node of it its own thread (pinned by the affinity
// string, if any). Idle nodes cost nothing on the pool; idle dedicated
// threads sleep on a futex after a short spin.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/actor/event_actor.hpp"
#include "troupe/pattern/farm.hpp"
#include "troupe/pattern/pipeline.hpp"
#include "troupe/runtime/actor_system.hpp"
#include "troupe/stream/build.hpp"

namespace troupe::stream {

/// Sent to a graph's entry: its input has ended.
struct end_of_stream {};

/// Sent to options.notify when a graph has finished: `error` is empty on
/// success, else the message of the exception that stopped it.
struct completed {
  std::string error;
};

enum class placement {
  pool,     ///< every node on the actor system's scheduler (default)
  threads,  ///< every node on its own thread
};

struct options {
  std::size_t capacity = 1024;        ///< slots per channel (rounded up to a power of two)
  std::size_t batch = 512;            ///< elements a node handles per activation
  enum placement placement = placement::pool;
  std::string affinity;               ///< placement::threads: affinity string for the threads
  actor results_to;                   ///< receives the last stage's outputs (if it has any)
  actor notify;                       ///< receives stream::completed at the end
  std::string metrics_json;           ///< file the final metrics are written to ("" = none)
  std::size_t latency_sample = 64;    ///< sinks measure one stamped element in this many
};

/// Wraps a pattern: each of its nodes gets its own thread, pinned by an
/// affinity string ("" = not pinned; node i goes to group i mod groups).
template <class P>
class dedicated {
 public:
  using in_type = typename P::in_type;
  using out_type = typename P::out_type;
  using stream_tag = void;

  explicit dedicated(P pattern, std::string cores = {})
      : p_{std::move(pattern)}, cores_{affinity::parse_for_machine(cores)} {}

  detail::downstream<in_type> build_stream(detail::builder& b, const detail::downstream<out_type>& next) const {
    const auto saved = b.settings;
    const auto saved_threads = b.threads;
    b.settings.dedicated = true;
    b.settings.cores = cores_;
    b.threads = 0;
    auto d = detail::build_stage(b, p_, next);
    b.settings = saved;
    b.threads = saved_threads;
    return d;
  }

 private:
  P p_;
  affinity cores_;
};

template <class P>
dedicated(P) -> dedicated<P>;
template <class P>
dedicated(P, std::string) -> dedicated<P>;
template <class P>
dedicated(P, const char*) -> dedicated<P>;

/// Every element goes to each branch (a copy each; within a branch, its
/// own routing), and the branches' outputs merge into the next stage:
///   pipeline{src, branches{pipeline{a, b}, c, farm{d, 2}}, sink}
/// All branches take the same element type and emit the same type.
template <class... Ps>
class branches {
 public:
  using in_type = typename std::tuple_element_t<0, std::tuple<Ps...>>::in_type;
  using out_type = typename std::tuple_element_t<0, std::tuple<Ps...>>::out_type;
  using stream_tag = void;
  static_assert(sizeof...(Ps) >= 1, "stream::branches needs at least one branch");
  static_assert(!std::is_void_v<in_type>, "stream::branches cannot start with a source");
  static_assert((std::is_same_v<typename Ps::in_type, in_type> && ...), "every branch must take the same element type");
  static_assert((std::is_same_v<typename Ps::out_type, out_type> && ...), "every branch must emit the same element type");

  explicit branches(Ps... ps) : ps_{std::move(ps)...} {}

  detail::downstream<in_type> build_stream(detail::builder& b, const detail::downstream<out_type>& next) const {
    detail::downstream<in_type> d;
    d.branches.resize(sizeof...(Ps));
    // Last branch first: metrics list runners in reverse build order.
    build_from<sizeof...(Ps) - 1>(b, next, d);
    return d;
  }

 private:
  template <std::size_t I>
  void build_from(detail::builder& b, const detail::downstream<out_type>& next, detail::downstream<in_type>& d) const {
    d.branches[I] = detail::build_stage(b, std::get<I>(ps_), next);
    if constexpr (I > 0) build_from<I - 1>(b, next, d);
  }

  std::tuple<Ps...> ps_;
};

namespace detail {

/// What a running graph shares between its runners, its entry and its handles.
struct graph_state {
  explicit graph_state(actor_system& s, options o) : sys{&s}, opts{std::move(o)} {}
  ~graph_state();

  actor_system* sys;
  options opts;
  std::vector<std::unique_ptr<runner_base>> runners;
  std::atomic<std::size_t> remaining{0};
  std::atomic<bool> cancelled{false};
  std::atomic<std::uint32_t> done{0};
  std::atomic<std::uint32_t> releasing{0};  // runners between clearing `active` and their last look
  std::mutex mtx;
  std::exception_ptr error;
  std::shared_ptr<graph_state> self;  // keeps the graph alive while a runner runs
  std::vector<std::thread> threads;
  std::chrono::steady_clock::time_point started;

  /// Starts every runner (pool) or its thread (dedicated).
  void launch(std::shared_ptr<graph_state> me);
  void fail(std::exception_ptr e) noexcept;
  void cancel() noexcept;
  /// Called by each runner as its very last action.
  void runner_finished() noexcept;
  graph_metrics metrics() const;
  /// Blocks (helping, on a worker) until done.
  void wait_done() const;
  bool wait_done_for(std::chrono::nanoseconds d) const;
};

/// The producer side of a graph's entry, owned by its entry actor.
template <class T>
struct entry_state {
  std::shared_ptr<graph_state> graph;
  outlet<T> out;
  bool closed = false;

  entry_state() = default;
  entry_state(const entry_state&) = delete;
  ~entry_state() { close(); }

  void push(T&& v) {
    if (closed || graph->cancelled.load(std::memory_order_relaxed)) {
      graph->sys->count_dead_letter();  // after the end of stream, or cancelled
      return;
    }
    out.send(std::move(v));
    out.take_sent();
    if (out.blocked()) {
      unsigned idle = 0;
      while (!out.flush()) {
        if (graph->cancelled.load(std::memory_order_acquire)) {
          out.discard();
          break;
        }
        out.sweep();
        if (troupe::detail::help_one()) idle = 0;
        else spin_then_yield(idle);
      }
    }
    out.sweep();
  }
  void close() noexcept {
    if (closed || !graph) return;
    closed = true;
    out.close();
  }
};

/// The sink that hands a graph's outputs to an actor.
template <class T>
class to_actor : public node<T, void> {
 public:
  static constexpr const char* kind = "to_actor";
  explicit to_actor(actor a) : a_{std::move(a)} {}
  void consume(T& v) { actor_cell::deliver(a_, troupe::detail::make_message(actor{}, 0, std::move(v))); }

 private:
  actor a_;
};

}  // namespace detail

/// A spawned stream graph. Copies share the graph; the graph runs until its
/// end of stream (or cancel) whether or not a handle is left.
class graph {
 public:
  graph() = default;
  graph(std::shared_ptr<detail::graph_state> st, actor entry) : st_{std::move(st)}, entry_{std::move(entry)} {}

  /// The entry actor (invalid when the graph starts with a source).
  const actor& entry() const noexcept { return entry_; }
  operator const actor&() const noexcept { return entry_; }

  /// Blocks until every node has finished; rethrows the exception that
  /// stopped the graph, if any. On a worker thread it helps run other work.
  void wait() const {
    st_->wait_done();
    rethrow();
  }
  /// false if the graph is still running after `d`.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> d) const {
    if (!st_->wait_done_for(std::chrono::duration_cast<std::chrono::nanoseconds>(d))) return false;
    rethrow();
    return true;
  }
  bool done() const noexcept { return st_->done.load(std::memory_order_acquire) != 0; }
  /// Ends the input of a graph with an entry (as end_of_stream does).
  void close() const;
  /// Stops every node now; queued elements are dropped.
  void cancel() const noexcept { st_->cancel(); }
  graph_metrics metrics() const { return st_->metrics(); }

 private:
  void rethrow() const {
    std::exception_ptr e;
    {
      std::lock_guard<std::mutex> guard{st_->mtx};
      e = st_->error;
    }
    if (e) std::rethrow_exception(e);
  }

  std::shared_ptr<detail::graph_state> st_;
  actor entry_;
};

inline void graph::close() const {
  if (entry_) st_->sys->send(entry_, end_of_stream{});
}

}  // namespace troupe::stream

namespace troupe {

/// Spawns a stream pattern (see stream/graph.hpp).
template <class P>
  requires(detail::is_stream_pattern<P>::value)
stream::graph spawn_pattern(actor_system& sys, P pattern, stream::options opts = {}) {
  using In = typename P::in_type;
  using Out = typename P::out_type;
  namespace sd = stream::detail;
  auto st = std::make_shared<sd::graph_state>(sys, std::move(opts));
  auto& o = st->opts;
  if (o.capacity == 0) throw std::invalid_argument("stream options: capacity must be at least 1");
  if (o.batch == 0) throw std::invalid_argument("stream options: batch must be at least 1");
  sd::builder b{*st, st->runners, o.capacity, sys.worker_count(), {}, 0};
  b.settings.batch = o.batch;
  b.settings.latency_sample = o.latency_sample;
  if (o.placement == stream::placement::threads) {
    b.settings.dedicated = true;
    b.settings.cores = affinity::parse_for_machine(o.affinity);
  }
  sd::downstream<In> first;
  if constexpr (std::is_void_v<Out>) {
    first = sd::build_stage(b, pattern, sd::downstream<void>{});
  } else {
    if (!o.results_to)
      throw std::invalid_argument("stream graph: its last stage emits values, but options.results_to names no actor");
    auto last = sd::build_stage(b, sd::to_actor<Out>{o.results_to}, sd::downstream<void>{});
    first = sd::build_stage(b, pattern, last);
  }
  actor entry;
  if constexpr (!std::is_void_v<In>) {
    auto es = std::make_shared<sd::entry_state<In>>();
    es->graph = st;
    es->out.attach(first, o.capacity, nullptr);
    entry = sys.spawn([es](event_actor&) {
      return behavior{[es](In& v) { es->push(std::move(v)); }, [es](stream::end_of_stream) { es->close(); }};
    });
  }
  st->launch(st);
  return stream::graph{std::move(st), std::move(entry)};
}

}  // namespace troupe
