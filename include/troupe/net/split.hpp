// split.hpp: one pipeline description, run across several processes.
//   auto graph = troupe::pipeline{source{}, troupe::farm{parse{}, 4},
//                                 troupe::farm{count{}, 4, troupe::by_key{&rec::key}}, sink{}};
//   net::cluster cl{sys, node, {.rank = rank, .peers = peers}};
//   auto g = net::split(cl, graph, net::placement::parse("0;0;0,1;1"));   // which rank runs what
//   g.wait();
// Every process builds the same description and runs its part: the replicas
// that the placement gives its rank. A placement names, per stage, the rank
// of each replica ("0;0;0,1;1": stages separated by ';', replica r of a
// stage on the r-th rank of its comma list, cycling: "0,1" alternates). A
// placement with one rank for everything runs the plain graph there
// (spawn_pattern), so the same program runs in one process or in several.
// Split, every replica runs alone on a thread of its own, between channels
// (channel.hpp): its input comes from an inlet that its upstream stage's
// replicas (in any process) send to, and its output is routed by the next
// stage's farm policy over that stage's replicas wherever they run (by key:
// one key reaches one replica across processes; broadcast: every replica;
// send_all: every replica). A replica and its neighbours on the same rank
// talk through the same channels, without serialisation; a stage of one
// replica that follows a stage of one replica on the same rank runs fused
// into it (called directly, as in troupe::chain: no channel, no thread).
// Rules: the stages are stream nodes (or chains) and unordered farms of
// them, with explicit replica counts (the same on every process);
// watermarks do not cross processes. Every rank must run the same
// description with the same placement and channel sizes.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/net/channel.hpp"
#include "troupe/troupe.hpp"
#include "troupe/util/cache.hpp"

namespace troupe::net {

/// Which rank runs each replica of each stage.
class placement {
 public:
  /// Stages separated by ';', each a comma list of ranks (replica r on the
  /// (r mod size)-th). Throws std::invalid_argument naming the bad part.
  static placement parse(const std::string& text);
  /// Everything on one rank.
  static placement single(std::size_t rank = 0);

  /// The rank of replica `r` of stage `s` (stages beyond the list: the last one's).
  std::size_t rank_of(std::size_t s, std::size_t r) const;
  std::size_t stages() const noexcept { return stages_.size(); }
  /// Every replica of every stage on the same rank.
  bool single_rank() const;
  /// The highest rank named.
  std::size_t max_rank() const;
  std::string to_string() const;

 private:
  std::vector<std::vector<std::size_t>> stages_;
};

/// How a split graph runs.
struct split_options {
  std::string name = "graph";  ///< prefix of its inlets' names (distinct per graph of a cluster)
  channel_config channel{};
  stream::options stream{};  ///< for the plain graph, and each replica's
};

/// This process's part of a split graph.
class split_graph {
 public:
  split_graph() = default;
  /// The whole graph, run here (single rank).
  explicit split_graph(stream::graph whole) { parts_.push_back(std::move(whole)); }

  void add(stream::graph part, std::shared_ptr<void> keep) {
    parts_.push_back(std::move(part));
    keep_.push_back(std::move(keep));
  }
  /// What cancel() sets: the local replicas' waits watch it.
  const std::shared_ptr<std::atomic<bool>>& cancel_flag() const noexcept { return cancelled_; }
  /// Blocks until every local replica has finished; rethrows the first
  /// failure (a lost peer: channel_error naming it).
  void wait() const;
  /// What this process ran: the plain graph's metrics, or one node per
  /// local replica (named after its node's kind, with its items in and out).
  stream::graph_metrics metrics() const;
  /// Whether this process runs anything.
  bool empty() const noexcept { return parts_.empty(); }
  /// Stops this process's part now (the peers fail with an error).
  void cancel() const noexcept;

  /// One split replica's counters (set by its segment).
  struct replica_stats {
    std::string kind;
    std::size_t replica = 0;
    std::atomic<std::uint64_t> in{0}, out{0};
    std::atomic<std::size_t> peak_queued{0};  ///< at its inlet, set when it ends
    stream::latency_histogram latency;
  };
  /// The most elements queued at once at a local replica's inlet (known
  /// once the replicas have ended): at most its senders' windows.
  std::size_t peak_queued() const;
  void track(std::shared_ptr<replica_stats> s) { stats_.push_back(std::move(s)); }

 private:
  std::vector<stream::graph> parts_;
  std::vector<std::shared_ptr<void>> keep_;
  std::vector<std::shared_ptr<replica_stats>> stats_;
  std::shared_ptr<std::atomic<bool>> cancelled_ = make_cancel_flag();

  /// A flag on a cache line of its own: every source segment reads it for
  /// every element, and a flag that shared its line with counters written by
  /// other threads missed the cache on most of those reads (a third of the
  /// source's step in remote_pipeline).
  static std::shared_ptr<std::atomic<bool>> make_cancel_flag() {
    struct alignas(cache_line) padded {
      std::atomic<bool> flag{false};
    };
    auto p = std::make_shared<padded>();
    return {p, &p->flag};
  }
};

namespace detail {

template <class N>
concept stream_node = requires {
  typename N::node_tag;
  typename N::in_type;
  typename N::out_type;
};

/// A stage as split sees it: its node, replica count and policy.
template <class S>
struct split_stage {
  static constexpr bool ok = false;
};
template <stream_node N>
struct split_stage<N> {
  static constexpr bool ok = true;
  using node_type = N;
  using policy = round_robin;
  // The stage lives in the pipeline the caller holds.
  static const N& node(const N& s) { return s; }  // NOLINT(bugprone-return-const-ref-from-parameter)
  static std::size_t replicas(const N&) { return 1; }
  static policy route(const N&) { return {}; }
};
template <stream_node N, class Pol>
struct split_stage<farm<N, Pol, false>> {
  static constexpr bool ok = true;
  using node_type = N;
  using policy = Pol;
  static const N& node(const farm<N, Pol, false>& f) { return f.pattern(); }
  static std::size_t replicas(const farm<N, Pol, false>& f) { return f.replicas(); }
  static policy route(const farm<N, Pol, false>& f) { return f.policy(); }
};

template <class N>
constexpr const char* kind_of() {
  if constexpr (requires { N::kind; }) return N::kind;
  else return "node";
}

template <class T>
using non_void = std::conditional_t<std::is_void_v<T>, char, T>;

/// What the replicas of one stage on this rank share.
template <class In, class Out>
struct stage_plan {
  cluster* cl = nullptr;
  std::size_t stage = 0, replicas = 1;
  std::vector<std::size_t> local;                            ///< global indices of the local replicas
  std::vector<std::shared_ptr<inlet<non_void<In>>>> inlets;  ///< per local replica (In not void, not fused)
  /// Makes a replica's way out (Out not void): an outlet to the next
  /// stage's inlets, or the next stage itself when it is fused into this one.
  std::function<std::unique_ptr<split_out<non_void<Out>>>()> make_out;
  /// Runs inside the previous stage's replica: both have one replica, on
  /// the same rank (no channel, no thread of its own).
  bool fused = false;
  std::vector<std::shared_ptr<split_graph::replica_stats>> stats;  ///< per local replica
  std::shared_ptr<std::atomic<bool>> cancelled;                    ///< split_graph::cancel()
  std::size_t latency_sample = 64;                                 ///< a sink measures one stamped element in this many
};

/// Counts a split replica's input and measures a sink's latency (sampled).
template <class In, bool Sink>
class replica_meter {
 public:
  void bind(std::shared_ptr<split_graph::replica_stats> s, std::size_t sample) {
    stats_ = std::move(s);
    sample_ = sample;
  }
  void seen(const In& x) {
    if constexpr (Sink && stream::stamped<In>)
      if (++since_ >= sample_) {
        since_ = 0;
        stats_->latency.record(stream::now() - x.stamp);
      }
  }
  void count(std::uint64_t n) noexcept { stats_->in.fetch_add(n, std::memory_order_relaxed); }
  split_graph::replica_stats& stats() noexcept { return *stats_; }

 private:
  std::shared_ptr<split_graph::replica_stats> stats_;
  std::size_t sample_ = 64, since_ = 0;
};

/// A stage fused into the replica of the stage before it: its node, called
/// directly with each element that one emits, and its own way out.
template <class N>
class fused_stage final : public split_out<typename N::in_type> {
  using In = typename N::in_type;
  using Out = typename N::out_type;
  static constexpr bool emits = !std::is_void_v<Out>;

 public:
  fused_stage(N node, std::shared_ptr<stage_plan<In, Out>> plan) : node_{std::move(node)}, plan_{std::move(plan)} {}

  void open(std::uint64_t /*id*/) override {
    meter_.bind(plan_->stats.at(0), plan_->latency_sample);
    troupe::detail::node_access::set_context(node_, stream::node_context{&plan_->cl->system(), 0, 1});
    if constexpr (emits) {
      out_ = plan_->make_out();
      troupe::detail::node_access::set_target(static_cast<stream::emitter<Out>&>(node_), out_.get());
      out_->open(sender_id(plan_->cl->rank(), 0));
    }
    node_.on_start();
  }
  void send_routed(In&& v) override {
    meter_.seen(v);
    node_.consume(v);
    if ((++in_ & 1023) == 0) publish();
  }
  bool send_if(In& v, std::size_t /*limit*/) override {
    send_routed(std::move(v));
    return true;
  }
  void send_all(In&& v) override { send_routed(std::move(v)); }  // one replica: the element is its copy
  void watermark(std::uint64_t /*w*/) override {}
  void idle() override {
    publish();
    node_.on_idle();
    if constexpr (emits) out_->idle();
  }
  void finish() override {
    node_.on_stop();
    if constexpr (emits) out_->finish();
    publish();
  }
  void abort(const error& why) override {
    if constexpr (emits)
      if (out_) out_->abort(why);
  }
  std::uint64_t emitted() const noexcept override { return emitted_.load(std::memory_order_relaxed); }

 private:
  void publish() {
    auto& st = meter_.stats();
    st.in.store(in_, std::memory_order_relaxed);
    if constexpr (emits) st.out.store(out_->emitted(), std::memory_order_relaxed);
    emitted_.store(in_, std::memory_order_relaxed);
  }

  N node_;
  std::shared_ptr<stage_plan<In, Out>> plan_;
  replica_meter<In, !emits> meter_;
  std::uint64_t in_ = 0;
  std::atomic<std::uint64_t> emitted_{0};
  std::unique_ptr<std::conditional_t<emits, split_out<non_void<Out>>, char>> out_;
};

/// One replica of a split stage: its inlet, its node (and the stages fused
/// into it) and its way out, on a thread of its own (a graph of one
/// node<void, void>).
template <class N>
class segment : public stream::node<void, void> {
  using In = typename N::in_type;
  using Out = typename N::out_type;
  static constexpr bool takes = !std::is_void_v<In>;
  static constexpr bool emits = !std::is_void_v<Out>;
  using plan_type = stage_plan<In, Out>;

 public:
  static constexpr const char* kind = "split";
  static constexpr bool needs_own_thread = true;

  segment(N node, std::shared_ptr<plan_type> plan) : node_{std::move(node)}, plan_{std::move(plan)} {}
  segment(const segment& o) : stream::node<void, void>{o}, node_{o.node_}, plan_{o.plan_} {}
  segment(segment&&) noexcept = default;

  void on_start() {
    local_ = this->replica_index();
    global_ = plan_->local.at(local_);
    stats_ = plan_->stats.at(local_);
    meter_.bind(stats_, plan_->latency_sample);
    troupe::detail::node_access::set_context(node_, stream::node_context{&this->system(), global_, plan_->replicas});
    if constexpr (emits) {
      out_ = plan_->make_out();
      troupe::detail::node_access::set_target(static_cast<stream::emitter<Out>&>(node_), out_.get());
      guarded([&] { out_->open(sender_id(plan_->cl->rank(), global_)); });
    }
    node_.on_start();
  }

  bool produce() {
    return guarded([&] { return step(); });
  }

 private:
  template <class F>
  auto guarded(F&& f) {
    try {
      return f();
    } catch (const std::exception& e) {
      const error why{errc::runtime_error, e.what()};
      if constexpr (takes) plan_->inlets.at(local_)->abort(why);
      if constexpr (emits)
        if (out_) out_->abort(why);
      throw;
    }
  }

  void check_cancelled() const {
    if (plan_->cancelled->load(std::memory_order_relaxed))
      throw channel_error("troupe::net::split: stage " + std::to_string(plan_->stage) + " replica " +
                          std::to_string(global_) + ": cancelled");
  }

  bool step() {
    check_cancelled();
    if constexpr (!takes) {
      // A source takes one step per element: its counter is published once
      // in 1024 steps.
      if constexpr (emits)
        if ((++steps_ & 1023) == 0) stats_->out.store(out_->emitted(), std::memory_order_relaxed);
      const bool going = node_.produce();
      auto& at = troupe::detail::node_access::resume_at(static_cast<stream::emitter<Out>&>(node_));
      if (at != 0) {  // a paced source: it sleeps now
        if constexpr (emits) out_->idle();
        const auto t = stream::now();
        if (at > t) std::this_thread::sleep_for(std::chrono::nanoseconds{at - t});
        at = 0;
      }
      if (!going) finish();
      return going;
    } else {
      auto& in = *plan_->inlets.at(local_);
      auto b = in.next(std::chrono::steady_clock::time_point{});
      if (!b) {
        if (in.ended()) {
          finish();
          return false;
        }
        node_.on_idle();
        if constexpr (emits) out_->idle();
        b = in.next(soon());
        if (!b) return true;
      }
      auto& items = b->second.items;
      for (auto& x : items) {
        meter_.seen(x);
        node_.consume(x);
      }
      meter_.count(items.size());
      if constexpr (emits) stats_->out.store(out_->emitted(), std::memory_order_relaxed);
      in.consumed(b->first, items.size());
      return true;
    }
  }

  void finish() {
    node_.on_stop();
    if constexpr (emits) {
      out_->finish();
      stats_->out.store(out_->emitted(), std::memory_order_relaxed);
    }
    if constexpr (takes) {
      stats_->peak_queued.store(plan_->inlets.at(local_)->peak_queued(), std::memory_order_relaxed);
      plan_->inlets.at(local_)->close();
    }
  }

  N node_;
  std::shared_ptr<plan_type> plan_;
  std::size_t local_ = 0, global_ = 0;
  std::uint64_t steps_ = 0;
  std::shared_ptr<split_graph::replica_stats> stats_;
  replica_meter<non_void<In>, !emits> meter_;
  std::unique_ptr<std::conditional_t<emits, split_out<non_void<Out>>, char>> out_;
};

template <class P>
struct split_rules {
  static constexpr bool stages_ok = false;
  static constexpr bool closed = false;
  static constexpr bool ok = false;
};
template <class... Ss>
struct split_rules<pipeline<Ss...>> {
  static constexpr bool stages_ok = (split_stage<Ss>::ok && ...);
  template <class S>
  static constexpr bool takes() {
    if constexpr (split_stage<S>::ok) return !std::is_void_v<typename split_stage<S>::node_type::in_type>;
    else return true;
  }
  template <class S>
  static constexpr bool emits() {
    if constexpr (split_stage<S>::ok) return !std::is_void_v<typename split_stage<S>::node_type::out_type>;
    else return true;
  }
  using first = std::tuple_element_t<0, std::tuple<Ss...>>;
  using last = std::tuple_element_t<sizeof...(Ss) - 1, std::tuple<Ss...>>;
  static constexpr bool closed = sizeof...(Ss) >= 2 && !takes<first>() && !emits<last>();
  static constexpr bool ok = stages_ok && closed;
};

inline std::string inlet_name(const std::string& graph, std::size_t stage, std::size_t replica) {
  return graph + "/" + std::to_string(stage) + "/" + std::to_string(replica);
}

/// Replica counts of every stage; throws when one is 0 (one per worker:
/// could differ between processes).
template <class... Ss, std::size_t... I>
std::vector<std::size_t> replica_counts(const pipeline<Ss...>& p, std::index_sequence<I...>) {
  std::vector<std::size_t> n{split_stage<Ss>::replicas(p.template stage<I>())...};
  for (std::size_t i = 0; i < n.size(); ++i)
    if (n[i] == 0)
      throw std::invalid_argument("troupe::net::split: stage " + std::to_string(i) +
                                  " is a farm of 0 replicas (one per worker); give it an explicit count, the same "
                                  "on every process");
  return n;
}

template <std::size_t I, class... Ss>
using node_of = typename split_stage<std::tuple_element_t<I, std::tuple<Ss...>>>::node_type;
template <std::size_t I, class... Ss>
using plan_of = stage_plan<typename node_of<I, Ss...>::in_type, typename node_of<I, Ss...>::out_type>;

/// Which stages run inside the replica before them: both have one replica,
/// on the same rank.
inline std::vector<bool> fusions(const std::vector<std::size_t>& counts, const placement& where) {
  std::vector<bool> f(counts.size(), false);
  for (std::size_t i = 1; i < counts.size(); ++i)
    f[i] = counts[i - 1] == 1 && counts[i] == 1 && where.rank_of(i - 1, 0) == where.rank_of(i, 0);
  return f;
}

/// Stage I's plan on this rank, with the inlets of its local replicas
/// (made and published before anything starts, so that local senders find
/// them).
template <std::size_t I, class... Ss>
std::shared_ptr<plan_of<I, Ss...>> plan_stage(cluster& cl, const placement& where, const split_options& o,
                                              const std::vector<std::size_t>& counts, const std::vector<bool>& fused,
                                              split_graph& g) {
  using N = node_of<I, Ss...>;
  using In = typename N::in_type;
  auto plan = std::make_shared<plan_of<I, Ss...>>();
  plan->cl = &cl;
  plan->stage = I;
  plan->replicas = counts[I];
  plan->fused = fused[I];
  plan->cancelled = g.cancel_flag();
  plan->latency_sample = std::max<std::size_t>(1, o.stream.latency_sample);
  for (std::size_t r = 0; r < counts[I]; ++r)
    if (where.rank_of(I, r) == cl.rank()) plan->local.push_back(r);
  for (auto r : plan->local) {
    auto st = std::make_shared<split_graph::replica_stats>();
    st->kind = kind_of<N>();
    st->replica = r;
    g.track(st);
    plan->stats.push_back(std::move(st));
    if constexpr (!std::is_void_v<In>) {
      if (plan->fused) continue;
      const auto name = inlet_name(o.name, I, r);
      auto in = inlet<In>::make(cl.system(), name, counts[I - 1], o.channel, cl.config().connect_timeout);
      cl.publish(in->handle(), name);
      plan->inlets.push_back(std::move(in));
    }
  }
  return plan;
}

/// How stage I's replicas emit: into the next stage fused into them, or
/// through an outlet to its inlets, routed by its policy.
template <std::size_t I, class... Ss, class Plans>
void wire_stage(cluster& cl, const pipeline<Ss...>& p, const placement& where, const split_options& o,
                const std::vector<std::size_t>& counts, const Plans& plans) {
  if constexpr (I + 1 < sizeof...(Ss)) {
    using Next = std::tuple_element_t<I + 1, std::tuple<Ss...>>;
    using Out = typename node_of<I, Ss...>::out_type;
    auto& plan = *std::get<I>(plans);
    const auto& next_plan = std::get<I + 1>(plans);
    if (next_plan->fused) {
      plan.make_out = [node = split_stage<Next>::node(p.template stage<I + 1>()), next_plan] {
        return std::unique_ptr<split_out<Out>>{new fused_stage<node_of<I + 1, Ss...>>{node, next_plan}};
      };
    } else {
      std::vector<std::size_t> ranks;
      std::vector<std::string> names;
      for (std::size_t r = 0; r < counts[I + 1]; ++r) {
        ranks.push_back(where.rank_of(I + 1, r));
        names.push_back(inlet_name(o.name, I + 1, r));
      }
      plan.make_out = [&cl, cfg = o.channel, policy = split_stage<Next>::route(p.template stage<I + 1>()), ranks, names,
                       cancel = plan.cancelled] {
        using outlet_type = outlet<Out, typename split_stage<Next>::policy>;
        auto out = std::make_unique<outlet_type>(cl, names.front(), cfg, policy, ranks, names);
        out->watch(cancel.get());
        return std::unique_ptr<split_out<Out>>{std::move(out)};
      };
    }
  }
}

template <std::size_t I, class... Ss, class Plan>
void spawn_stage(cluster& cl, const pipeline<Ss...>& p, const split_options& o, const std::shared_ptr<Plan>& plan,
                 split_graph& g) {
  if (plan->local.empty() || plan->fused) return;
  using S = std::tuple_element_t<I, std::tuple<Ss...>>;
  segment<node_of<I, Ss...>> seg{split_stage<S>::node(p.template stage<I>()), plan};
  g.add(spawn_pattern(cl.system(), farm{std::move(seg), plan->local.size()}, o.stream), plan);
}

template <class... Ss, std::size_t... I>
void split_all(cluster& cl, const pipeline<Ss...>& p, const placement& where, const split_options& o, split_graph& g,
               std::index_sequence<I...>) {
  const auto counts = replica_counts(p, std::index_sequence<I...>{});
  const auto fused = fusions(counts, where);
  std::tuple<std::shared_ptr<plan_of<I, Ss...>>...> plans;  // made in stage order (the metrics' order)
  ((std::get<I>(plans) = plan_stage<I, Ss...>(cl, where, o, counts, fused, g)), ...);
  (wire_stage<I>(cl, p, where, o, counts, plans), ...);
  (spawn_stage<I>(cl, p, o, std::get<I>(plans), g), ...);
}

template <class P>
struct split_check {
  static_assert(split_rules<P>::stages_ok,
                "troupe::net::split: every stage must be a stream node (or chain) or an unordered farm of one; "
                "fuse pipelines inside a stage with troupe::chain");
  static_assert(split_rules<P>::closed,
                "troupe::net::split: the pipeline must run from a source to a sink, in two stages or more");
};

}  // namespace detail

/// Whether split() takes P: a pipeline from a source to a sink of nodes and
/// unordered farms of nodes.
template <class P>
inline constexpr bool splittable = detail::split_rules<P>::ok;

/// Runs this process's part of `p` (see the top of this header). Throws
/// std::invalid_argument for a placement that does not fit (a rank outside
/// the cluster, a farm without a replica count) and net_error when a peer
/// cannot be found within the cluster's connect_timeout.
template <class... Ss>
split_graph split(cluster& cl, const pipeline<Ss...>& p, const placement& where, const split_options& o = {}) {
  static_assert(sizeof(detail::split_check<pipeline<Ss...>>) > 0);
  if constexpr (!detail::split_rules<pipeline<Ss...>>::ok) {
    return {};
  } else {
    if (where.max_rank() >= cl.size())
      throw std::invalid_argument("troupe::net::split: the placement '" + where.to_string() + "' names rank " +
                                  std::to_string(where.max_rank()) + ", but the cluster has " +
                                  std::to_string(cl.size()) + " ranks");
    if (where.single_rank()) {
      if (where.rank_of(0, 0) != cl.rank()) return {};
      return split_graph{spawn_pattern(cl.system(), p, o.stream)};
    }
    split_graph g;
    detail::split_all(cl, p, where, o, g, std::index_sequence_for<Ss...>{});
    return g;
  }
}

}  // namespace troupe::net
