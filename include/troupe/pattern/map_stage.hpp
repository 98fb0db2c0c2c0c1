// map_stage.hpp: the map pattern as a stage of a pipeline or farm: an item
// is a std::vector<T>, mapped in parallel on the scheduler's workers (see
// map.hpp) into a std::vector<U>.
//   troupe::pipeline{troupe::seq{load_row}, troupe::map_stage{[](double x) { return f(x); }}, troupe::seq{reduce}}
#pragma once

#include <vector>

#include "troupe/pattern/map.hpp"
#include "troupe/pattern/seq.hpp"

namespace troupe {

template <class F, class T = std::decay_t<std::tuple_element_t<0, typename detail::callable_traits<F>::args>>>
class map_stage {
 public:
  using element_out = std::decay_t<std::invoke_result_t<F&, const T&>>;
  using in_type = std::vector<T>;
  using out_type = std::vector<element_out>;

  explicit map_stage(F f, partition part = partition::dynamic()) : f_{std::move(f)}, part_{part} {}

  detail::router<in_type> build(actor_system& sys, detail::router<out_type> next, std::vector<actor>& spawned) const {
    auto* s = &sys;
    auto body = [s, f = f_, part = part_](in_type&& in) { return map(*s, std::span<const T>{in}, f, part); };
    return seq<decltype(body), in_type, out_type>{std::move(body)}.build(sys, std::move(next), spawned);
  }

 private:
  F f_;
  partition part_;
};

}  // namespace troupe
