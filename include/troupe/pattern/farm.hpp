// farm.hpp: replicates a pattern into N replicas.
//   troupe::farm{worker{}, 4}                                  // round robin
//   troupe::farm{counter{}, 4, troupe::by_key{&word::text}}    // by key
//   troupe::farm{worker{}, 4, troupe::round_robin{}, troupe::ordered}  // outputs in input order
// N = 0 means one replica per scheduler worker. Routing (stream/routing.hpp)
// runs in the upstream stage itself: every upstream replica writes straight
// into the replicas' channels, so a pipeline of farms has no router stage.
// Nested farms are flattened: the outer policy picks among all replicas.
//
// Ordered: the outputs leave the farm in the order its inputs came in. The
// farm gets two stages of one replica each around its replicas: a sequencer
// that numbers each input and routes it with the policy, and a reorder stage
// that takes the replicas' outputs in that order (an input may have any
// number of outputs; they stay together, in the order they were emitted).
// The replicas of an ordered farm may be nodes and pipelines of nodes, not
// farms or branches (whose outputs could not be put back in order), must
// take and emit values, and the policy cannot be broadcast: each is a
// compile error ("troupe::farm: ...").
// Cost: unordered, nothing beyond the replicas; ordered, two hops more and a
// sequence number, reply address and flag with each element between them.
#pragma once

#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <type_traits>

#include "troupe/pattern/stage.hpp"
#include "troupe/stream/routing.hpp"

namespace troupe {

/// Tag for an order-preserving farm.
inline constexpr struct ordered_tag {
} ordered{};

namespace detail {

/// Policy::pick(const T&, n) gives a replica.
template <class Policy, class T>
concept picks_for = requires(Policy& p, const T& v) {
  { p.pick(v, std::size_t{1}) } -> std::convertible_to<std::size_t>;
};

/// A routing policy for elements of type T: a class with pick (or
/// broadcast); any other callable is wrapped in routed_by.
template <class Policy, class T>
struct policy_for {
  using type = Policy;
};
template <class Policy, class T>
  requires(!broadcasting<Policy> && !picks_for<Policy, T> && !load_aware_route<Policy, T> &&
           std::is_invocable_v<Policy&, const T&, std::size_t>)
struct policy_for<Policy, T> {
  using type = routed_by<Policy>;
};
template <class Policy, class T>
using policy_for_t = typename policy_for<Policy, T>::type;

template <class P, class Policy, bool Ordered>
struct farm_rules {
  using in = in_type_of<P>;
  static constexpr bool is_stage = stage<P>;
  static constexpr bool routes =
      !is_stage || std::is_void_v<in> || broadcasting<Policy> || load_aware_route<Policy, in> || picks_for<Policy, in>;
  static constexpr bool ordered_io = !Ordered || !is_stage || (!std::is_void_v<in> && !std::is_void_v<out_type_of<P>>);
  static constexpr bool ordered_flat = !Ordered || !is_stage || !splits<P>::value;
  static constexpr bool ordered_routes = !Ordered || !broadcasting<Policy>;
  static constexpr bool ordered_timely = !Ordered || !is_stage || !defers<P>::value;
  static constexpr bool ok =
      is_stage && routes && ordered_io && ordered_flat && ordered_routes && ordered_timely && well_formed<P>::value;
};

/// The diagnostics of farm<P, Policy, Ordered> (see stage.hpp).
template <class P, class Policy, bool Ordered>
struct farm_check {
  using rules = farm_rules<P, Policy, Ordered>;
  static_assert(rules::is_stage,
                "troupe::farm: the pattern to replicate is neither a stream node nor a pattern; "
                "wrap a function in troupe::seq{f}");
  static_assert(rules::routes,
                "troupe::farm: the policy cannot route the farm's input type: a policy needs "
                "pick(const In&, std::size_t) (or is broadcast / least_loaded), a key function must "
                "take const In&");
  static_assert(rules::ordered_io,
                "troupe::farm: an ordered farm's replicas must take and emit values (no sources, no sinks)");
  static_assert(rules::ordered_flat,
                "troupe::farm: an ordered farm's replicas may not hold farms or branches (their outputs could "
                "not be put back in order); make the inner farm the ordered one, or put it after the ordered farm");
  static_assert(rules::ordered_routes,
                "troupe::farm: an ordered farm cannot broadcast (each input has one place in the order)");
  static_assert(rules::ordered_timely,
                "troupe::farm: an ordered farm's replicas must emit each input's outputs while handling it; a node "
                "that batches (it defines on_idle, as opencl::device_map does) emits them later: use an unordered "
                "farm, or put the batching node after the ordered farm");
};

}  // namespace detail

template <class P, class Policy = round_robin, bool Ordered = false>
class farm {
  static_assert(sizeof(detail::farm_check<P, Policy, Ordered>) > 0);  // the diagnostics (stage.hpp)
  static constexpr bool ok = detail::farm_rules<P, Policy, Ordered>::ok;

 public:
  using in_type = detail::in_type_of<P>;
  using out_type = detail::out_type_of<P>;
  using pattern_tag = void;
  static constexpr bool well_formed = ok;

  template <std::integral N = std::size_t>
  explicit farm(P pattern, N replicas = 0) : p_{std::move(pattern)}, n_{count(replicas)} {}
  template <std::integral N, class Pol>
  farm(P pattern, N replicas, Pol policy) : p_{std::move(pattern)}, n_{count(replicas)}, policy_{std::move(policy)} {}
  template <std::integral N, class Pol>
  farm(P pattern, N replicas, Pol policy, ordered_tag)
      : p_{std::move(pattern)}, n_{count(replicas)}, policy_{std::move(policy)} {}

  /// 0: one per scheduler worker.
  std::size_t replicas() const noexcept { return n_; }
  /// The replicated pattern and the routing policy (as given).
  const P& pattern() const noexcept { return p_; }
  const Policy& policy() const noexcept { return policy_; }
  static constexpr bool is_ordered = Ordered;

  template <bool Tagged, class Next>
  auto build(detail::builder& b, const Next& next) const {
    if (n_ == 0 && b.split != nullptr)
      throw std::invalid_argument(
          "troupe::farm: a farm of 0 replicas (one per worker) in a graph split across processes: give it an explicit "
          "count, the same in every process");
    const std::size_t n = n_ != 0 ? n_ : b.default_replicas;
    if constexpr (!Ordered) {
      return replicate<Tagged>(b, next, n);
    } else {
      const auto saved = b.settings;
      b.settings.replica = 0;
      b.settings.replicas = 1;
      auto into = detail::build_reorder<out_type, Tagged>(b, next);
      auto replicas = replicate<true>(b, into, n);
      b.settings.replica = 0;
      b.settings.replicas = 1;
      auto d = detail::build_stage<false>(b, detail::sequencer<in_type, Tagged>{}, replicas);
      b.settings = saved;
      return d;
    }
  }

 private:
  template <std::integral N>
  static std::size_t count(N n) {
    if constexpr (std::is_signed_v<N>)
      if (n < 0) throw std::invalid_argument("troupe::farm: the replica count must not be negative");
    return static_cast<std::size_t>(n);
  }

  template <bool Tagged, class Next>
  auto replicate(detail::builder& b, const Next& next, std::size_t n) const {
    const auto saved = b.settings;
    const auto saved_ranks = b.ranks;
    b.settings.replicas = n;
    // Split across processes: replica i runs on the i-th rank, cycling.
    auto place = [&](std::size_t i) {
      b.settings.replica = i;
      if (saved_ranks.size() > 1) b.ranks = {saved_ranks[i % saved_ranks.size()]};
    };
    if constexpr (std::is_void_v<in_type>) {
      for (std::size_t i = n; i-- > 0;) {
        place(i);
        detail::build_stage<Tagged>(b, p_, next);
      }
      b.settings = saved;
      b.ranks = saved_ranks;
      return detail::no_downstream{};
    } else {
      detail::downstream<detail::wire<in_type, Tagged>, Policy> d{{}, policy_};
      // Last replica first: the graph is built back to front, and its metrics
      // list the runners in reverse build order (front to back).
      for (std::size_t i = n; i-- > 0;) {
        place(i);
        auto sub = detail::build_stage<Tagged>(b, p_, next);
        d.ports.insert(d.ports.begin(), sub.ports.begin(), sub.ports.end());
      }
      b.settings = saved;
      b.ranks = saved_ranks;
      return d;
    }
  }

  P p_;
  std::size_t n_;
  Policy policy_{};
};

template <class P, std::integral N>
farm(P, N) -> farm<P>;
template <class P, std::integral N, class Pol>
farm(P, N, Pol) -> farm<P, detail::policy_for_t<Pol, detail::in_type_of<P>>>;
template <class P, std::integral N, class Pol>
farm(P, N, Pol, ordered_tag) -> farm<P, detail::policy_for_t<Pol, detail::in_type_of<P>>, true>;

namespace detail {
template <class P, class Policy, bool Ordered>
struct splits<farm<P, Policy, Ordered>> : std::true_type {};
template <class P, class Policy, bool Ordered>
struct defers<farm<P, Policy, Ordered>> : defers<P> {};
template <class P, class Policy, bool Ordered>
struct well_formed<farm<P, Policy, Ordered>> : std::bool_constant<farm<P, Policy, Ordered>::well_formed> {};
}  // namespace detail

}  // namespace troupe
