// dac_sort, troupe: merge sort as divide & conquer over spans, in place;
// a sub-array at or below the cut-off is the base case, sorted with std::sort.
#include "impls.hpp"

#include <troupe/troupe.hpp>

#include <algorithm>
#include <span>

bench::sample bench::run_troupe(const params& p) {
  auto v = dac_sort::input(p.get("n"));
  const auto before = dac_sort::fingerprint_of(v);
  const auto cutoff = static_cast<std::size_t>(p.get("cutoff"));
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  using range = std::span<std::int32_t>;
  // Base case: a sub-array at or below the cut-off, sorted with std::sort.
  auto spec = troupe::dac{
      .is_base = [cutoff](const range& r) { return r.size() <= cutoff; },
      .solve =
          [](range r) {
            std::sort(r.begin(), r.end());
            return r;
          },
      .divide = [](range r) { return std::vector<range>{r.subspan(0, r.size() / 2), r.subspan(r.size() / 2)}; },
      .combine =
          [](range r, std::vector<range> parts) {
            std::inplace_merge(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(parts[0].size()), r.end());
            return r;
          }};
  stopwatch sw;
  troupe::divide_and_conquer(sys, range{v}, spec);
  sample s;
  s.wall_s = sw.seconds();
  dac_sort::check_sorted(v, before);
  return s;
}
