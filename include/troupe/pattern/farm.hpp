// farm.hpp: replicates a pattern into N workers.
//   troupe::farm{troupe::seq{f}, 4}                                 // round robin
//   troupe::farm{troupe::seq{f}, 4, troupe::by_key{&order::customer}}
//   troupe::farm{troupe::seq{f}, 4, troupe::round_robin{}, troupe::ordered}  // results in input order
// N = 0 means one replica per scheduler worker. The upstream stage routes
// each item straight into a replica (see routing.hpp): a pipeline of farms
// has no router actor between them. An ordered farm adds one collector actor
// that releases results in input order (items that failed are skipped in
// order, their error already answered).
// Cost: unordered, nothing beyond the replicas; ordered, one extra hop and a
// buffer of the items that overtook others.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <type_traits>

#include "troupe/pattern/routing.hpp"
#include "troupe/pattern/stage.hpp"
#include "troupe/stream/build.hpp"

namespace troupe {

/// Tag for an order-preserving farm.
inline constexpr struct ordered_tag {
} ordered{};

template <class P, class Policy = round_robin>
class farm {
 public:
  using in_type = typename P::in_type;
  using out_type = typename P::out_type;

  farm(P pattern, std::size_t replicas = 0, Policy policy = {}) : p_{std::move(pattern)}, n_{replicas}, policy_{std::move(policy)} {}
  farm(P pattern, std::size_t replicas, Policy policy, ordered_tag)
      : p_{std::move(pattern)}, n_{replicas}, policy_{std::move(policy)}, ordered_{true} {}

  std::size_t replicas() const noexcept { return n_; }

  detail::router<in_type> build(actor_system& sys, detail::router<out_type> next, std::vector<actor>& spawned) const {
    const std::size_t n = n_ != 0 ? n_ : sys.worker_count();
    if (ordered_) next = collector(sys, std::move(next), spawned);
    auto replicas = std::make_shared<std::vector<detail::router<in_type>>>();
    for (std::size_t i = 0; i < n; ++i) replicas->push_back(p_.build(sys, next, spawned));
    auto counter = std::make_shared<std::atomic<std::uint64_t>>(0);
    const bool ordered = ordered_;
    auto load = [replicas] {
      std::size_t sum = 0;
      for (auto& r : *replicas) sum += r.load();
      return sum;
    };
    auto send = [replicas, counter, ordered, policy = policy_](detail::envelope<in_type>&& e) {
      if (ordered) e.seq.push_back(counter->fetch_add(1, std::memory_order_relaxed));
      auto& rs = *replicas;
      if constexpr (std::is_same_v<Policy, broadcast>) {
        for (std::size_t i = 0; i + 1 < rs.size(); ++i) rs[i].send(detail::envelope<in_type>{e});
        rs.back().send(std::move(e));
      } else if constexpr (std::is_same_v<Policy, least_loaded>) {
        std::size_t best = 0, best_load = SIZE_MAX;
        for (std::size_t i = 0; i < rs.size(); ++i)
          if (auto l = rs[i].load(); l < best_load) best = i, best_load = l;
        rs[best].send(std::move(e));
      } else {
        std::size_t i = e.value ? policy(*e.value, rs.size()) % rs.size() : 0;
        rs[i].send(std::move(e));
      }
    };
    return detail::router<in_type>{std::move(send), std::move(load)};
  }

  /// Stream graphs: N replicas, routed into by every upstream replica with
  /// this farm's policy (no router node). Nested farms are flattened: the
  /// outermost policy picks among all replicas.
  stream::detail::downstream<in_type> build_stream(stream::detail::builder& b,
                                                   const stream::detail::downstream<out_type>& next) const {
    if (ordered_) throw std::invalid_argument("troupe::ordered farms cannot be used in a stream graph");
    const std::size_t n = n_ != 0 ? n_ : b.default_replicas;
    stream::detail::downstream<in_type> d;
    const auto saved = b.settings.replica;
    // Last replica first: the graph is built back to front, and its metrics
    // list the runners in reverse build order (front to back).
    for (std::size_t i = n; i-- > 0;) {
      b.settings.replica = i;
      auto sub = stream::detail::build_stage(b, p_, next);
      if constexpr (!std::is_void_v<in_type>) d.ports.insert(d.ports.begin(), sub.ports.begin(), sub.ports.end());
    }
    b.settings.replica = saved;
    if constexpr (!std::is_void_v<in_type>) d.set_policy(policy_);
    return d;
  }

 private:
  // Releases envelopes in the order their farm received them.
  static detail::router<out_type> collector(actor_system& sys, detail::router<out_type> next,
                                            std::vector<actor>& spawned) {
    auto a = sys.spawn([next](event_actor&) mutable {
      return behavior{[next, expected = std::uint64_t{0},
                       held = std::map<std::uint64_t, detail::envelope<out_type>>{}](
                          detail::envelope<out_type>& e) mutable {
        ++e.hops;
        auto s = e.seq.back();
        e.seq.pop_back();
        if (s != expected) {
          held.emplace(s, std::move(e));
          return;
        }
        next.send(std::move(e));
        for (++expected; !held.empty() && held.begin()->first == expected; ++expected) {
          next.send(std::move(held.begin()->second));
          held.erase(held.begin());
        }
      }};
    });
    spawned.push_back(a);
    return detail::actor_router<out_type>(a);
  }

  P p_;
  std::size_t n_;
  Policy policy_;
  bool ordered_ = false;
};

template <class P>
farm(P, std::size_t) -> farm<P>;
template <class P, class Policy>
farm(P, std::size_t, Policy) -> farm<P, Policy>;
template <class P, class Policy>
farm(P, std::size_t, Policy, ordered_tag) -> farm<P, Policy>;

namespace detail {
template <class P, class Policy>
struct is_stream_pattern<farm<P, Policy>> : is_stream_pattern<P> {};
}  // namespace detail

}  // namespace troupe
