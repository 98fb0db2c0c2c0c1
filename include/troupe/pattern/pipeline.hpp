// pipeline.hpp: stages in order; each works on the next element while later
// stages work on earlier ones.
//   troupe::pipeline{source, troupe::farm{parse{}, 4}, troupe::seq{score}, sink}
// Stage N's output type must be stage N+1's input type, and every stage a
// node or a pattern: otherwise the pipeline does not compile, with one error
// ("troupe::pipeline: ...") whose instantiation note names the stage's
// position and type (pipeline_stage<N, S>, pipeline_link<N, From, To>).
// Cost: one bounded channel per pair of consecutive replicas; consecutive
// farms route replica to replica (no router stage).
#pragma once

#include <cstddef>
#include <tuple>
#include <utility>

#include "troupe/pattern/stage.hpp"

namespace troupe {

template <class... Ps>
class pipeline {
  static_assert(sizeof...(Ps) > 0, "troupe::pipeline: a pipeline needs at least one stage");
  using checks =
      detail::pipeline_checks<std::index_sequence_for<Ps...>, std::make_index_sequence<sizeof...(Ps) - 1>, Ps...>;
  static_assert(sizeof(checks) > 0);  // the diagnostics (stage.hpp)
  static constexpr bool fits = checks::ok;

 public:
  using in_type = detail::in_type_of<std::tuple_element_t<0, std::tuple<Ps...>>>;
  using out_type = detail::out_type_of<std::tuple_element_t<sizeof...(Ps) - 1, std::tuple<Ps...>>>;
  using pattern_tag = void;
  static constexpr bool well_formed = fits && (detail::well_formed<Ps>::value && ...);

  explicit pipeline(Ps... stages) : stages_{std::move(stages)...} {}

  /// Builds the stages back to front (build.hpp).
  template <bool Tagged, class Next>
  auto build(detail::builder& b, const Next& next) const {
    return build_from<Tagged, sizeof...(Ps) - 1>(b, next);
  }

  template <std::size_t I>
  const auto& stage() const noexcept {
    return std::get<I>(stages_);
  }

 private:
  template <bool Tagged, std::size_t I, class D>
  auto build_from(detail::builder& b, const D& next) const {
    auto d = detail::build_stage<Tagged>(b, std::get<I>(stages_), next);
    if constexpr (I == 0) return d;
    else return build_from<Tagged, I - 1>(b, d);
  }

  std::tuple<Ps...> stages_;
};

template <class... Ps>
pipeline(Ps...) -> pipeline<Ps...>;

namespace detail {
template <class... Ps>
struct splits<pipeline<Ps...>> : std::bool_constant<(splits<Ps>::value || ...)> {};
template <class... Ps>
struct defers<pipeline<Ps...>> : std::bool_constant<(defers<Ps>::value || ...)> {};
template <class... Ps>
struct well_formed<pipeline<Ps...>> : std::bool_constant<pipeline<Ps...>::well_formed> {};
}  // namespace detail

}  // namespace troupe
