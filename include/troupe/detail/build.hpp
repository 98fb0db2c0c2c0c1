// layer: stream
// build.hpp: how a pattern becomes runners and channels. A graph is built
// back to front: each stage is given what follows it (its replicas' ports and
// routing policy, as a downstream<E, Route>) and returns its own. A node
// becomes one runner; a pattern description (pipeline, farm, branches,
// placed: anything with a pattern_tag) arranges the stages inside it.
// Tagged: the stage runs inside a graph that answers actors or inside an
// ordered farm, where channels carry tagged elements (tagged.hpp).
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "troupe/detail/builder.hpp"
#include "troupe/detail/edge.hpp"
#include "troupe/detail/graph_state.hpp"
#include "troupe/detail/runner.hpp"

namespace troupe::detail {

/// A stream node: a class deriving from stream::node<In, Out>.
template <class S>
concept node_stage = requires {
  typename S::in_type;
  typename S::out_type;
  typename S::node_tag;
};
/// A pattern description: it builds the stages inside it.
template <class S>
concept pattern_stage = requires {
  typename S::in_type;
  typename S::out_type;
  typename S::pattern_tag;
};

template <class N>
inline constexpr bool needs_own_thread = requires { requires N::needs_own_thread; };

template <bool Tagged, class P, class Next>
auto build_stage(builder& b, const P& p, const Next& next) {
  if constexpr (pattern_stage<P>) {
    return p.template build<Tagged>(b, next);
  } else {
    static_assert(node_stage<P>, "troupe: a stage must be a stream node or a pattern");
    using In = typename P::in_type;
    using Out = typename P::out_type;
    const auto s = next_settings(b, needs_own_thread<P>);
    using E = wire<In, Tagged>;
    port<std::conditional_t<std::is_void_v<E>, char, E>>* entry = nullptr;
    if (runs_here(b, s)) {
      auto& r = add_runner(b, std::make_unique<runner<P, Tagged, Next>>(b.graph, p, s, *b.graph.sys));
      if constexpr (!std::is_void_v<Out>) r.attach(next, b.capacity);
      local_slot(b, r, next);
      if constexpr (!std::is_void_v<In>) entry = &r;
    } else {
      entry = remote_slot<E>(b, s, !std::is_void_v<Out> && emits_watermarks<P>, next);
    }
    if constexpr (std::is_void_v<In>) {
      return no_downstream{};
    } else {
      downstream<E, direct> d;
      d.ports.push_back(entry);
      return d;
    }
  }
}

/// An ordered farm's reorder stage (runner.hpp), before `next`; returns its port.
template <class Out, bool Tagged, class Next>
downstream<tagged<Out>, direct> build_reorder(builder& b, const Next& next) {
  const auto s = next_settings(b);
  downstream<tagged<Out>, direct> into;
  if (runs_here(b, s)) {
    auto& order = add_runner(b, std::make_unique<reorder_runner<Out, Tagged, Next>>(b.graph, s));
    order.attach(next, b.capacity);
    local_slot(b, order, next);
    into.ports.push_back(&order);
  } else {
    into.ports.push_back(remote_slot<tagged<Out>>(b, s, false, next));
  }
  return into;
}

/// What build_stage<Tagged> of P returns when followed by Next.
template <bool Tagged, class P, class Next>
using built_t =
    decltype(build_stage<Tagged>(std::declval<builder&>(), std::declval<const P&>(), std::declval<const Next&>()));

/// An ordered farm's first stage: numbers the farm's input.
template <class In, bool Tagged>
class sequencer final : public stream::node<wire<In, Tagged>, tagged<In>> {
 public:
  static constexpr const char* kind = "sequencer";
  void consume(wire<In, Tagged>& v) {
    if constexpr (Tagged) {
      v.seq = next_++;
      v.last = true;
      this->send_next(std::move(v));
    } else {
      this->send_next(tagged<In>{std::move(v), {}, next_++, true});
    }
  }

 private:
  std::uint64_t next_ = 0;
};

/// The last stage of a graph that answers actors: each result goes to the
/// requester (or sender) of the item it comes from. A result of no item
/// (emitted in on_stop, say) goes to options.results_to; a result nobody
/// takes is counted as a dead letter.
template <class Out>
class reply_sink final : public stream::node<tagged<Out>, void> {
 public:
  static constexpr const char* kind = "reply";
  explicit reply_sink(actor results_to) : results_to_{std::move(results_to)} {}
  void consume(tagged<Out>& v) {
    if (!v.value) return;
    if (v.reply.deliver(std::move(*v.value))) return;  // untouched when it returns false
    if (results_to_) actor_cell::deliver(results_to_, make_message(actor{}, 0, std::move(*v.value)));
    else count_dead_letter(this->system());
  }

 private:
  actor results_to_;
};

}  // namespace troupe::detail
