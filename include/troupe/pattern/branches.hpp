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
/// Branch `Index` (0-based) of a branches{...}.
template <std::size_t Index, class B, class In, class Out>
struct branch_check {
  static constexpr bool is_stage = stage<B>;
  static_assert(is_stage, "troupe::branches: this branch is neither a stream node nor a pattern");
  static constexpr bool same_types =
      !is_stage || (std::is_same_v<in_type_of<B>, In> && std::is_same_v<out_type_of<B>, Out>);
  static_assert(same_types, "troupe::branches: every branch must take and emit the same types as the first");
  static constexpr bool takes = !is_stage || !std::is_void_v<in_type_of<B>>;
  static_assert(takes, "troupe::branches: a branch cannot start with a source");
  static constexpr bool ok = is_stage && same_types && takes && well_formed<B>::value;
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
  static constexpr bool well_formed = []<std::size_t... I>(std::index_sequence<I...>) {
    return (detail::branch_check<I, Ps, in_type, out_type>::ok && ...);
  }(std::index_sequence_for<Ps...>{});

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
struct well_formed<branches<Ps...>> : std::bool_constant<branches<Ps...>::well_formed> {};
}  // namespace detail

}  // namespace troupe
