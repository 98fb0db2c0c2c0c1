// placed.hpp: runs part of a pattern somewhere else than the rest.
//   troupe::placed{troupe::farm{parse{}, 2}, troupe::placement::own_thread("<2> <3>")}
// Each node of the wrapped pattern gets a thread of its own (pinned to the
// core groups in turn, if any), or runs on the pool (placement::pool()) in
// a graph whose other nodes have threads. See runtime/placement.hpp.
// A bad affinity string is an affinity_error when the placed is made.
// In a graph split across processes (troupe::net::split),
// placement::ranks("0,1") says which process runs the wrapped part: replica
// i of a farm in it on the i-th rank of the list, cycling.
#pragma once

#include <utility>
#include <vector>

#include "troupe/pattern/stage.hpp"
#include "troupe/runtime/placement.hpp"
#include "troupe/util/affinity.hpp"

namespace troupe {

template <class P>
class placed {
  static_assert(stage<P>, "troupe::placed: the pattern to place is neither a stream node nor a pattern");

 public:
  using in_type = detail::in_type_of<P>;
  using out_type = detail::out_type_of<P>;
  using pattern_tag = void;
  static constexpr bool well_formed = stage<P> && detail::well_formed<P>::value;

  placed(P pattern, const troupe::placement& where)
      : p_{std::move(pattern)},
        threads_{where.places_threads()},
        own_{where.own_thread_each()},
        cores_{affinity::parse_for_machine(where.cores())},
        ranks_{where.rank_list()} {}

  template <bool Tagged, class Next>
  auto build(detail::builder& b, const Next& next) const {
    const auto saved = b.settings;
    const auto saved_threads = b.threads;
    const auto saved_ranks = b.ranks;
    if (threads_) {
      b.settings.dedicated = own_;
      b.settings.cores = cores_;
      b.threads = 0;
    }
    if (!ranks_.empty()) b.ranks = ranks_;
    auto d = detail::build_stage<Tagged>(b, p_, next);
    b.settings = saved;
    b.threads = saved_threads;
    b.ranks = saved_ranks;
    return d;
  }

 private:
  P p_;
  bool threads_;
  bool own_;
  affinity cores_;
  std::vector<std::size_t> ranks_;
};

template <class P>
placed(P, troupe::placement) -> placed<P>;

namespace detail {
template <class P>
struct splits<placed<P>> : splits<P> {};
template <class P>
struct defers<placed<P>> : defers<P> {};
template <class P>
struct well_formed<placed<P>> : std::bool_constant<placed<P>::well_formed> {};
}  // namespace detail

}  // namespace troupe
