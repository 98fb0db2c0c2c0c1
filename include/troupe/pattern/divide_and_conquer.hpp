// divide_and_conquer.hpp: the divide & conquer pattern as fork/join tasks on
// the work-stealing scheduler (not one actor per sub-problem).
//   auto sorted = troupe::divide_and_conquer(sys, problem, troupe::dac{
//       .is_base = [](const P& p) { return p.size() <= 1; },
//       .solve   = [](P p) -> R { ... },               // base case
//       .divide  = [](P p) -> std::vector<P> { ... },  // sub-problems
//       .combine = [](P p, std::vector<R> parts) -> R { ... },
//       .sequential = [](const P& p) { return p.size() < 10'000; }});  // cut-off
// Sub-problems of one division run in parallel (all but the first are
// forked; the caller works on the first and then helps). Below the cut-off
// the recursion runs sequentially on the calling thread. Exceptions of any
// piece reach the caller. Call it from main (blocks) or from an actor
// (its worker helps with the tasks while it waits).
// As a stage of a pattern, each item a problem and its result the output:
//   troupe::pipeline{problems, troupe::dac_stage{spec}, results}
// Cost: one task per forked sub-problem; pick the cut-off so that a
// sequential leaf takes at least some tens of microseconds.
#pragma once

#include <cstddef>
#include <iterator>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/pattern/task_group.hpp"
#include "troupe/stream/node.hpp"

namespace troupe {

/// The four functions of divide & conquer, plus the sequential cut-off
/// (default: never, i.e. fork down to the base cases).
template <class IsBase, class Solve, class Divide, class Combine, class Sequential = std::nullptr_t>
struct dac {
  IsBase is_base;
  Solve solve;
  Divide divide;
  Combine combine;
  Sequential sequential = nullptr;
};

namespace detail {

template <class P, class Spec>
auto dac_sequential(P&& p, Spec& spec) {
  if (spec.is_base(std::as_const(p))) return spec.solve(std::forward<P>(p));
  auto parts = spec.divide(p);
  using R = decltype(spec.solve(std::move(*std::begin(parts))));
  std::vector<R> results;
  results.reserve(std::size(parts));
  for (auto& part : parts) results.push_back(dac_sequential(std::move(part), spec));
  return spec.combine(std::forward<P>(p), std::move(results));
}

template <class P, class Spec>
auto dac_parallel(actor_system& sys, P&& p, Spec& spec) {
  using Problem = std::decay_t<P>;
  if constexpr (!std::is_same_v<decltype(spec.sequential), std::nullptr_t>) {
    if (spec.sequential(std::as_const(p))) return dac_sequential(std::forward<P>(p), spec);
  }
  if (spec.is_base(std::as_const(p))) return spec.solve(std::forward<P>(p));
  std::vector<Problem> parts = spec.divide(p);
  using R = decltype(spec.solve(std::move(parts.front())));
  static_assert(std::is_default_constructible_v<R> && std::is_move_assignable_v<R>,
                "divide_and_conquer: the result type must be default-constructible and move-assignable");
  std::vector<R> results(parts.size());
  if (!parts.empty()) {
    task_group g{sys};
    for (std::size_t i = 1; i < parts.size(); ++i)
      g.run([&sys, &spec, &parts, &results, i] { results[i] = dac_parallel(sys, std::move(parts[i]), spec); });
    results[0] = dac_parallel(sys, std::move(parts[0]), spec);
    g.wait();
  }
  return spec.combine(std::forward<P>(p), std::move(results));
}

}  // namespace detail

/// Solves `problem` with `spec`; see the top of this header.
template <class P, class IsBase, class Solve, class Divide, class Combine, class Sequential>
auto divide_and_conquer(actor_system& sys, P problem, dac<IsBase, Solve, Divide, Combine, Sequential> spec) {
  if (detail::on_worker_thread()) return detail::dac_parallel(sys, std::move(problem), spec);
  // From outside the pool (main): the whole problem is a task and the caller
  // only waits. Working on the first sub-problem here as well would put one
  // thread more than there are workers on the cores.
  decltype(detail::dac_parallel(sys, std::move(problem), spec)) result{};
  task_group g{sys};
  g.run([&] { result = detail::dac_parallel(sys, std::move(problem), spec); });
  g.wait();
  return result;
}

/// divide_and_conquer as a stream stage: each input is a problem, its result
/// the output (the problem type is solve's parameter type).
template <class Spec, class P = stream::detail::first_arg<decltype(Spec::solve)>,
          class R = std::decay_t<std::invoke_result_t<decltype(Spec::solve)&, P&&>>>
class dac_stage : public stream::node<P, R> {
 public:
  static constexpr const char* kind = "dac_stage";
  explicit dac_stage(Spec spec) : spec_{std::move(spec)} {}
  void consume(P& p) { this->send_next(detail::dac_parallel(this->system(), std::move(p), spec_)); }

 private:
  Spec spec_;
};

template <class Spec>
dac_stage(Spec) -> dac_stage<Spec>;

}  // namespace troupe
