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
// talk through the same channels, without serialisation.
// Rules: the stages are stream nodes (or chains) and unordered farms of
// them, with explicit replica counts (the same on every process);
// watermarks do not cross processes. Every rank must run the same
// description with the same placement and channel sizes.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
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
  std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
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
  static const N& node(const N& s) { return s; }
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

/// What the replicas of one stage on this rank share.
template <class In>
struct stage_plan {
  cluster* cl = nullptr;
  std::size_t stage = 0, replicas = 1;
  std::vector<std::size_t> local;                  ///< global indices of the local replicas
  std::vector<std::shared_ptr<inlet<In>>> inlets;  ///< per local replica (In not void)
  std::vector<std::size_t> next_ranks;             ///< rank of each replica of the next stage
  std::vector<std::string> next_names;             ///< inlet name of each
  channel_config channel{};
  std::vector<std::shared_ptr<split_graph::replica_stats>> stats;  ///< per local replica
  std::shared_ptr<std::atomic<bool>> cancelled;                    ///< split_graph::cancel()
  std::size_t latency_sample = 64;                                 ///< a sink measures one stamped element in this many
};
template <>
struct stage_plan<void> : stage_plan<char> {};

/// One replica of a split stage: its inlet, its node and its outlet, on a
/// thread of its own (a graph of one node<void, void>).
template <class N, class NextPolicy>
class segment : public stream::node<void, void> {
  using In = typename N::in_type;
  using Out = typename N::out_type;
  static constexpr bool takes = !std::is_void_v<In>;
  static constexpr bool emits = !std::is_void_v<Out>;
  using plan_type = stage_plan<std::conditional_t<takes, In, void>>;

 public:
  static constexpr const char* kind = "split";
  static constexpr bool needs_own_thread = true;

  segment(N node, NextPolicy policy, std::shared_ptr<plan_type> plan)
      : node_{std::move(node)}, policy_{std::move(policy)}, plan_{std::move(plan)} {}
  segment(const segment& o) : stream::node<void, void>{o}, node_{o.node_}, policy_{o.policy_}, plan_{o.plan_} {}

  void on_start() {
    local_ = this->replica_index();
    global_ = plan_->local.at(local_);
    stats_ = plan_->stats.at(local_);
    troupe::detail::node_access::set_context(node_, stream::node_context{&this->system(), global_, plan_->replicas});
    if constexpr (emits) {
      out_ = std::make_unique<outlet<Out, NextPolicy>>(*plan_->cl, channel_name(), plan_->channel, policy_);
      out_->watch(plan_->cancelled.get());
      troupe::detail::node_access::set_target(static_cast<stream::emitter<Out>&>(node_), out_.get());
      guarded([&] { out_->open(sender_id(plan_->cl->rank(), global_), plan_->next_ranks, plan_->next_names); });
    }
    node_.on_start();
  }

  bool produce() {
    return guarded([&] { return step(); });
  }

 private:
  std::string channel_name() const {
    return plan_->next_names.empty() ? std::string{"out"} : plan_->next_names.front();
  }

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

  bool step() {
    if (plan_->cancelled->load(std::memory_order_relaxed))
      throw channel_error("troupe::net::split: stage " + std::to_string(plan_->stage) + " replica " +
                          std::to_string(global_) + ": cancelled");
    if constexpr (!takes) {
      const bool going = node_.produce();
      if constexpr (emits) stats_->out.store(out_->emitted(), std::memory_order_relaxed);
      auto& at = troupe::detail::node_access::resume_at(static_cast<stream::emitter<Out>&>(node_));
      if (at != 0) {
        if constexpr (emits) out_->flush_all();
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
        if constexpr (emits) out_->flush_all();
        b = in.next(soon());
        if (!b) return true;
      }
      for (auto& x : b->second) {
        if constexpr (!emits && stream::stamped<In>)
          if (++since_sample_ >= plan_->latency_sample) {
            since_sample_ = 0;
            stats_->latency.record(stream::now() - x.stamp);
          }
        node_.consume(x);
      }
      stats_->in.fetch_add(b->second.size(), std::memory_order_relaxed);
      if constexpr (emits) stats_->out.store(out_->emitted(), std::memory_order_relaxed);
      in.consumed(b->first, b->second.size());
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
  NextPolicy policy_;
  std::shared_ptr<plan_type> plan_;
  std::size_t local_ = 0, global_ = 0;
  std::size_t since_sample_ = 0;
  std::shared_ptr<split_graph::replica_stats> stats_;
  std::unique_ptr<std::conditional_t<emits, outlet<Out, NextPolicy>, char>> out_;
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

/// Builds the inlets of stage I's local replicas (before anything starts, so
/// that local senders find them), then spawns them once all are published.
template <std::size_t I, class... Ss>
auto plan_stage(cluster& cl, const pipeline<Ss...>& /*p*/, const placement& where, const split_options& o,
                const std::vector<std::size_t>& counts, split_graph& g) {
  using S = std::tuple_element_t<I, std::tuple<Ss...>>;
  using N = typename split_stage<S>::node_type;
  using In = typename N::in_type;
  auto plan = std::make_shared<stage_plan<std::conditional_t<std::is_void_v<In>, void, In>>>();
  plan->cl = &cl;
  plan->stage = I;
  plan->replicas = counts[I];
  plan->channel = o.channel;
  plan->cancelled = g.cancel_flag();
  plan->latency_sample = std::max<std::size_t>(1, o.stream.latency_sample);
  for (std::size_t r = 0; r < counts[I]; ++r)
    if (where.rank_of(I, r) == cl.rank()) plan->local.push_back(r);
  if constexpr (I + 1 < sizeof...(Ss)) {
    for (std::size_t r = 0; r < counts[I + 1]; ++r) {
      plan->next_ranks.push_back(where.rank_of(I + 1, r));
      plan->next_names.push_back(inlet_name(o.name, I + 1, r));
    }
  }
  for (auto r : plan->local) {
    auto st = std::make_shared<split_graph::replica_stats>();
    st->kind = kind_of<N>();
    st->replica = r;
    g.track(st);
    plan->stats.push_back(std::move(st));
    if constexpr (!std::is_void_v<In>) {
      const auto name = inlet_name(o.name, I, r);
      auto in = inlet<In>::make(cl.system(), name, counts[I - 1], o.channel, cl.config().connect_timeout);
      cl.publish(in->handle(), name);
      plan->inlets.push_back(std::move(in));
    }
  }
  return plan;
}

template <std::size_t I, class... Ss, class Plan>
void spawn_stage(cluster& cl, const pipeline<Ss...>& p, const split_options& o, const std::shared_ptr<Plan>& plan,
                 split_graph& g) {
  if (plan->local.empty()) return;
  using S = std::tuple_element_t<I, std::tuple<Ss...>>;
  using N = typename split_stage<S>::node_type;
  const auto& stage = p.template stage<I>();
  if constexpr (I + 1 < sizeof...(Ss)) {
    using Next = std::tuple_element_t<I + 1, std::tuple<Ss...>>;
    using Pol = typename split_stage<Next>::policy;
    segment<N, Pol> seg{split_stage<S>::node(stage), split_stage<Next>::route(p.template stage<I + 1>()), plan};
    g.add(spawn_pattern(cl.system(), farm{std::move(seg), plan->local.size()}, o.stream), plan);
  } else {
    segment<N, round_robin> seg{split_stage<S>::node(stage), round_robin{}, plan};
    g.add(spawn_pattern(cl.system(), farm{std::move(seg), plan->local.size()}, o.stream), plan);
  }
}

template <class... Ss, std::size_t... I>
void split_all(cluster& cl, const pipeline<Ss...>& p, const placement& where, const split_options& o, split_graph& g,
               std::index_sequence<I...>) {
  const auto counts = replica_counts(p, std::index_sequence<I...>{});
  auto plans = std::make_tuple(plan_stage<I>(cl, p, where, o, counts, g)...);
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
split_graph split(cluster& cl, const pipeline<Ss...>& p, const placement& where, split_options o = {}) {
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
