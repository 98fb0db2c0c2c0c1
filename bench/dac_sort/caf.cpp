// dac_sort, CAF 0.17: the same merge sort with one actor per sub-problem
// above the cut-off (the way an actor framework expresses divide & conquer):
// a node sorts its range with std::sort at or below the cut-off, otherwise
// spawns two children, waits for both, merges and reports to its parent.
#include "impls.hpp"

#include <algorithm>

#include "common/caf_support.hpp"

namespace {

using done_atom = caf::atom_constant<caf::atom("done")>;

caf::behavior sort_node(caf::event_based_actor* self, std::int32_t* data, std::int64_t lo, std::int64_t hi,
                        std::int64_t cutoff, caf::actor parent) {
  if (hi - lo <= cutoff) {
    std::sort(data + lo, data + hi);
    self->send(parent, done_atom::value);
    return {};
  }
  auto mid = lo + (hi - lo) / 2;
  auto me = caf::actor_cast<caf::actor>(self);
  self->spawn(sort_node, data, lo, mid, cutoff, me);
  self->spawn(sort_node, data, mid, hi, cutoff, me);
  auto pending = std::make_shared<int>(2);
  return {[=](done_atom) {
    if (--*pending > 0) return;
    std::inplace_merge(data + lo, data + mid, data + hi);
    self->send(parent, done_atom::value);
    self->quit();
  }};
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  auto v = dac_sort::input(p.get("n"));
  const auto before = dac_sort::fingerprint_of(v);
  const auto workers = p.get("workers");
  caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  stopwatch sw;
  sys.spawn(sort_node, v.data(), std::int64_t{0}, static_cast<std::int64_t>(v.size()), p.get("cutoff"),
            caf::actor_cast<caf::actor>(self));
  self->receive([](done_atom) {});
  sample s;
  s.wall_s = sw.seconds();
  dac_sort::check_sorted(v, before);
  return s;
}
