// pipeline.hpp: stages in order; each works on the next item while later
// stages work on earlier ones.
//   troupe::pipeline{troupe::seq{parse}, troupe::farm{troupe::seq{score}, 4}, troupe::seq{format}}
// Stage N's output type must be stage N+1's input type: otherwise the
// pipeline does not compile, and the error names both types
// (stage_types_match<Out, In>).
// Cost: one message per stage per item; consecutive stages (farms included)
// send directly to each other.
#pragma once

#include <tuple>
#include <utility>

#include "troupe/pattern/stage.hpp"
#include "troupe/stream/build.hpp"

namespace troupe {

namespace detail {
template <class... Ps>
struct chain_fits : std::true_type {};
template <class A, class B, class... Rest>
struct chain_fits<A, B, Rest...>
    : std::bool_constant<stage_types_match<typename A::out_type, typename B::in_type> && chain_fits<B, Rest...>::value> {};
}  // namespace detail

template <class... Ps>
  requires(sizeof...(Ps) > 0)
class pipeline {
  using first = std::tuple_element_t<0, std::tuple<Ps...>>;
  using last = std::tuple_element_t<sizeof...(Ps) - 1, std::tuple<Ps...>>;

 public:
  using in_type = typename first::in_type;
  using out_type = typename last::out_type;

  explicit pipeline(Ps... stages)
    requires(detail::chain_fits<Ps...>::value)
      : stages_{std::move(stages)...} {}

  detail::router<in_type> build(actor_system& sys, detail::router<out_type> next, std::vector<actor>& spawned) const {
    return build_from<sizeof...(Ps) - 1>(sys, std::move(next), spawned);
  }

  /// Stream graphs: the stages' runners, back to front.
  stream::detail::downstream<in_type> build_stream(stream::detail::builder& b,
                                                   const stream::detail::downstream<out_type>& next) const {
    return stream_from<sizeof...(Ps) - 1>(b, next);
  }

 private:
  template <std::size_t I, class D>
  auto stream_from(stream::detail::builder& b, const D& next) const {
    auto d = stream::detail::build_stage(b, std::get<I>(stages_), next);
    if constexpr (I == 0) return d;
    else return stream_from<I - 1>(b, d);
  }

  template <std::size_t I, class R>
  auto build_from(actor_system& sys, R next, std::vector<actor>& spawned) const {
    auto r = std::get<I>(stages_).build(sys, std::move(next), spawned);
    if constexpr (I == 0) return r;
    else return build_from<I - 1>(sys, std::move(r), spawned);
  }

  std::tuple<Ps...> stages_;
};

template <class... Ps>
pipeline(Ps...) -> pipeline<Ps...>;

namespace detail {
template <class... Ps>
struct is_stream_pattern<pipeline<Ps...>> : std::bool_constant<(is_stream_pattern<Ps>::value && ...)> {};
}  // namespace detail

}  // namespace troupe
