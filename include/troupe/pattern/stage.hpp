// stage.hpp: what the composable patterns (seq, farm, pipeline, map_stage)
// have in common. Users do not need it directly.
//
// A pattern is a value with `in_type`, `out_type` and a `build` function.
// spawn_pattern builds it back to front: each stage is given the router of
// what follows it and returns its own router. A router is a plain function
// call made by the upstream stage itself, so consecutive stages (farm into
// farm included) talk directly, actor to actor: no router actor in between.
// Items travel in an envelope that carries the reply address (a response
// promise for requests, or the actor that collects results), the sequence
// numbers of order-preserving farms, and a hop count.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/actor/event_actor.hpp"
#include "troupe/runtime/actor_system.hpp"

namespace troupe {
namespace detail {

template <class T>
struct envelope {
  std::optional<T> value;         // empty: the item failed upstream (already answered)
  response_promise reply;         // pending for requests
  actor results_to;               // for plain sends: where results go
  std::vector<std::uint64_t> seq; // one entry per enclosing order-preserving farm
  std::uint32_t hops = 0;         // actors the item has passed through

  /// Same addressing, another value (the next stage's output).
  template <class U>
  envelope<U> with(std::optional<U> v) && {
    return envelope<U>{std::move(v), std::move(reply), std::move(results_to), std::move(seq), hops};
  }
};

template <class T>
struct router {
  std::function<void(envelope<T>&&)> send;
  std::function<std::size_t()> load;  // queued items at the entry (for least_loaded)
};

/// A stage that threw: answer the requester (or the result collector) with
/// the error, and pass an empty envelope on so that ordered farms keep going.
template <class In, class Out>
envelope<Out> failed(envelope<In>&& e, const char* what) {
  error err{errc::unhandled_exception, std::string{"pattern stage failed: "} + what};
  if (e.reply.pending()) e.reply.deliver(err);
  else if (e.results_to) actor_cell::deliver(e.results_to, make_message(actor{}, 0, std::move(err)));
  e.reply = response_promise{};
  return std::move(e).template with<Out>(std::nullopt);
}

/// Router of one actor that takes envelope<T>.
template <class T>
router<T> actor_router(actor a) {
  return router<T>{[a](envelope<T>&& e) { actor_cell::deliver(a, make_message(actor{}, 0, std::move(e))); },
                   [a] { return a->mailbox_size(); }};
}

/// true for stream patterns (troupe::stream nodes, and farms and pipelines
/// made of them): spawn_pattern builds those as stream graphs.
template <class P>
struct is_stream_pattern : std::bool_constant<requires { typename P::stream_tag; }> {};

template <class F, class In>
using stage_result = std::decay_t<std::invoke_result_t<F&, In&&>>;

}  // namespace detail

/// Consecutive stages fit when the first one's output type is the second
/// one's input type; a pipeline that breaks this does not compile, and the
/// diagnostic names both types.
template <class Out, class In>
concept stage_types_match = std::same_as<Out, In>;

}  // namespace troupe
