// branches.hpp: every element to each branch (a copy each; within a branch,
// its own routing), and the branches' outputs merged into the next stage:
//   troupe::pipeline{src, troupe::branches{troupe::pipeline{a, b}, c, troupe::farm{d, 2}}, sink}
// All branches take the same element type and emit the same type; none may
// start with a source (a compile error names the branch otherwise).
// Cost: a copy of each element per branch but the last; each producer
// replica keeps one outlet (channels, policy, overflow) per branch.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "troupe/pattern/stage.hpp"

namespace troupe {

namespace detail {
template <class B, class In, class Out>
inline constexpr bool branch_types_ok =
    !stage<B> || (std::is_same_v<in_type_of<B>, In> && std::is_same_v<out_type_of<B>, Out>);
template <class B>
inline constexpr bool branch_takes = !stage<B> || !std::is_void_v<in_type_of<B>>;
template <class B, class In, class Out>
inline constexpr bool branch_ok = stage<B> && branch_types_ok<B, In, Out> && branch_takes<B> && well_formed<B>::value;

/// Branch `Index` (0-based) of a branches{...}: the diagnostics (see stage.hpp).
template <std::size_t Index, class B, class In, class Out>
struct branch_check {
  static_assert(stage<B>, "troupe::branches: this branch is neither a stream node nor a pattern");
  static_assert(branch_types_ok<B, In, Out>,
                "troupe::branches: every branch must take and emit the same types as the first");
  static_assert(branch_takes<B>, "troupe::branches: a branch cannot start with a source");
};
template <class Indices, class In, class Out, class... Ps>
struct branches_checks;
template <std::size_t... I, class In, class Out, class... Ps>
struct branches_checks<std::index_sequence<I...>, In, Out, Ps...> {
  static_assert(((sizeof(branch_check<I, Ps, In, Out>) > 0) && ...));
  static constexpr bool ok = (branch_ok<Ps, In, Out> && ...);
};
}  // namespace detail

template <class... Ps>
class branches {
  static_assert(sizeof...(Ps) >= 1, "troupe::branches: needs at least one branch");
  using first = std::tuple_element_t<0, std::tuple<Ps...>>;

 public:
  using in_type = detail::in_type_of<first>;
  using out_type = detail::out_type_of<first>;
  using pattern_tag = void;
  using checks = detail::branches_checks<std::index_sequence_for<Ps...>, in_type, out_type, Ps...>;
  static_assert(sizeof(checks) > 0);  // the diagnostics (stage.hpp)
  static constexpr bool well_formed = checks::ok;

  explicit branches(Ps... ps) : ps_{std::move(ps)...} {}

  template <bool Tagged, class Next>
  auto build(detail::builder& b, const Next& next) const {
    auto parts = build_parts<Tagged, 0>(b, next);
    return std::apply(
        [](auto&&... d) {
          return detail::fanout<detail::wire<in_type, Tagged>, std::decay_t<decltype(d)>...>{{std::move(d)...}};
        },
        std::move(parts));
  }

 private:
  // Last branch first (metrics list runners in reverse build order).
  template <bool Tagged, std::size_t I, class Next>
  auto build_parts(detail::builder& b, const Next& next) const {
    if constexpr (I == sizeof...(Ps)) {
      return std::tuple<>{};
    } else {
      auto rest = build_parts<Tagged, I + 1>(b, next);
      auto mine = detail::build_stage<Tagged>(b, std::get<I>(ps_), next);
      return std::tuple_cat(std::make_tuple(std::move(mine)), std::move(rest));
    }
  }

  std::tuple<Ps...> ps_;
};

template <class... Ps>
branches(Ps...) -> branches<Ps...>;

namespace detail {
template <class... Ps>
struct splits<branches<Ps...>> : std::true_type {};
template <class... Ps>
struct defers<branches<Ps...>> : std::bool_constant<(defers<Ps>::value || ...)> {};
template <class... Ps>
struct well_formed<branches<Ps...>> : std::bool_constant<branches<Ps...>::well_formed> {};
}  // namespace detail

}  // namespace troupe
