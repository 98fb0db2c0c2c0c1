// map_stage.hpp: the map pattern as a stage: an item is a std::vector<T>,
// mapped in parallel on the scheduler's workers (see map.hpp) into a
// std::vector<U>.
//   troupe::pipeline{load_rows, troupe::map_stage{[](double x) { return f(x); }}, reduce}
// On the pool, the stage's worker takes part in the map and the others help;
// on a thread of its own, the stage waits while the workers map.
// Cost: that of map() per item.
#pragma once

#include <span>
#include <type_traits>
#include <vector>

#include "troupe/pattern/map.hpp"
#include "troupe/stream/node.hpp"

namespace troupe {

template <class F, class T = stream::detail::first_arg<F>>
class map_stage : public stream::node<std::vector<T>, std::vector<std::decay_t<std::invoke_result_t<F&, const T&>>>> {
 public:
  static constexpr const char* kind = "map_stage";
  explicit map_stage(F f, partition part = partition::dynamic()) : f_{std::move(f)}, part_{part} {}
  void consume(std::vector<T>& in) { this->send_next(map(this->system(), std::span<const T>{in}, f_, part_)); }

 private:
  F f_;
  partition part_;
};

template <class F>
map_stage(F) -> map_stage<F>;
template <class F>
map_stage(F, partition) -> map_stage<F>;

}  // namespace troupe
