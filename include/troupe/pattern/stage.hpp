// stage.hpp: what may be a stage of a pattern, and the checks that make a
// misuse one readable compile error naming the stage.
//   stage<S>: S is a stream node (a class deriving from stream::node<In, Out>,
//   or a lambda form: stream::map, seq, ...) or a pattern (pipeline, farm,
//   branches, placed).
// Every pattern checks its stages with these when it is declared; the
// compiler's message starts with "troupe::<pattern>: ..." and its
// instantiation note names the stage's position and type.
#pragma once

#include <concepts>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "troupe/detail/build.hpp"

namespace troupe {

template <class... Ns>
class chain;  // stream/chain.hpp

template <class S>
concept stage = detail::node_stage<S> || detail::pattern_stage<S>;

/// Consecutive stages fit when the first one's output type is the second
/// one's input type.
template <class Out, class In>
concept stage_types_match = std::same_as<Out, In>;

namespace detail {

/// Stands in for the types of something that is not a stage (so that one
/// check fails, not every use of its types).
struct not_a_stage {};

template <class S>
struct stage_types {
  using in_type = not_a_stage;
  using out_type = not_a_stage;
};
template <stage S>
struct stage_types<S> {
  using in_type = typename S::in_type;
  using out_type = typename S::out_type;
};
template <class S>
using in_type_of = typename stage_types<S>::in_type;
template <class S>
using out_type_of = typename stage_types<S>::out_type;

// The checks come in pairs: a value (..._ok, used to decide) and a struct
// whose static_assert is the diagnostic; a pattern's body instantiates the
// structs (sizeof) so that a broken rule is exactly one compile error, whose
// instantiation note names the stage, and nothing else fails after it.

/// Stage `Index` (0-based) of a pipeline.
template <std::size_t Index, class S>
struct pipeline_stage {
  static_assert(stage<S>,
                "troupe::pipeline: this stage is neither a stream node (a class deriving from "
                "troupe::stream::node<In, Out>, or stream::map/filter/sink/...) nor a pattern "
                "(pipeline, farm, branches, placed); wrap a function in troupe::seq{f}");
};

template <class From, class To>
inline constexpr bool link_ok = !stage<From> || !stage<To> || std::is_same_v<out_type_of<From>, in_type_of<To>>;

/// Stage `Index` emits what stage Index + 1 takes.
template <std::size_t Index, class From, class To>
struct pipeline_link {
  static_assert(link_ok<From, To>,
                "troupe::pipeline: a stage takes another type than the stage before it emits "
                "(see pipeline_link<Index, From, To>: stage Index+1 must take From::out_type)");
};

template <class Stages, class Links, class... Ps>
struct pipeline_checks;
template <std::size_t... I, std::size_t... L, class... Ps>
struct pipeline_checks<std::index_sequence<I...>, std::index_sequence<L...>, Ps...> {
  template <std::size_t J>
  using at = std::tuple_element_t<J, std::tuple<Ps...>>;
  static constexpr bool ok = (stage<Ps> && ...) && (link_ok<at<L>, at<L + 1>> && ...);
  static_assert(((sizeof(pipeline_stage<I, Ps>) > 0) && ...));
  static_assert(((sizeof(pipeline_link<L, at<L>, at<L + 1>>) > 0) && ...));
};

/// Whether a pattern holds a farm or branches anywhere inside (an ordered
/// farm cannot: their outputs could not be put back in order).
template <class P>
struct splits : std::false_type {};

/// Whether a pattern holds a node that emits an input's outputs after it
/// has handled that input (a node that batches: it defines on_idle, or
/// declares `static constexpr bool defers_outputs = true;`). An ordered farm
/// cannot hold one: it numbers outputs by the input being handled.
template <class P>
constexpr bool node_defers() {
  if constexpr (requires { P::defers_outputs; }) {
    return P::defers_outputs;
  } else if constexpr (requires { typename P::node_tag; }) {
    if constexpr (std::is_void_v<typename P::in_type>) return false;
    else return stream::detail::defines_on_idle<P>;
  } else {
    return false;
  }
}
template <class P>
struct defers : std::bool_constant<node_defers<P>()> {};
template <class... Ns>
struct defers<chain<Ns...>> : std::bool_constant<(defers<Ns>::value || ...)> {};

/// Every check of a pattern passed (spawn_pattern builds only those, so that
/// a failed check is the only error).
template <class P>
struct well_formed : std::bool_constant<stage<P>> {};

}  // namespace detail
}  // namespace troupe
