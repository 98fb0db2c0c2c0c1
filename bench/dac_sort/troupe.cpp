// dac_sort, troupe: merge sort as divide & conquer; a sub-array at or below
// the cut-off is the base case, sorted with std::sort.
//   troupe            the merges are troupe::parallel_merge, split into tasks
//                     on the same pool; each sub-problem sorts into the array
//                     or into one buffer of n elements, alternately by level
//                     (the children's results are in the other one), so a
//                     merge never copies back
//   troupe_seq_merge  the combine is std::inplace_merge on the task that
//                     combines (the last merge, all n elements, runs on one
//                     thread)
#include "impls.hpp"

#include <troupe/troupe.hpp>

#include <algorithm>
#include <memory>
#include <span>

namespace {

using range = std::span<std::int32_t>;

// A sub-array and its share of the buffer; `to_buffer` says where its sorted
// result must end up.
struct piece {
  range data, buffer;
  bool to_buffer = false;
};

}  // namespace

bench::sample bench::run_troupe(const params& p) {
  auto v = dac_sort::input(p.get("n"));
  const auto before = dac_sort::fingerprint_of(v);
  const auto cutoff = static_cast<std::size_t>(p.get("cutoff"));
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  auto spec = troupe::dac{.is_base = [cutoff](const piece& q) { return q.data.size() <= cutoff; },
                          .solve =
                              [](piece q) {
                                std::sort(q.data.begin(), q.data.end());
                                if (q.to_buffer) std::copy(q.data.begin(), q.data.end(), q.buffer.begin());
                                return q;
                              },
                          .divide =
                              [](piece q) {
                                const auto mid = q.data.size() / 2;
                                return std::vector<piece>{{q.data.first(mid), q.buffer.first(mid), !q.to_buffer},
                                                          {q.data.subspan(mid), q.buffer.subspan(mid), !q.to_buffer}};
                              },
                          .combine =
                              [&sys](piece q, std::vector<piece> parts) {
                                const auto mid = parts[0].data.size();
                                const range from = q.to_buffer ? q.data : q.buffer;  // where the parts' results are
                                const range to = q.to_buffer ? q.buffer : q.data;
                                troupe::parallel_merge(sys, from.first(mid), from.subspan(mid), to.begin());
                                return q;
                              }};
  stopwatch sw;
  // Not initialised: its pages are first touched by the leaves and merges
  // that write them, on both workers.
  auto buffer = std::make_unique_for_overwrite<std::int32_t[]>(v.size());
  troupe::divide_and_conquer(sys, piece{v, range{buffer.get(), v.size()}, false}, spec);
  sample s;
  s.wall_s = sw.seconds();
  dac_sort::check_sorted(v, before);
  return s;
}

bench::sample bench::run_troupe_seq_merge(const params& p) {
  auto v = dac_sort::input(p.get("n"));
  const auto before = dac_sort::fingerprint_of(v);
  const auto cutoff = static_cast<std::size_t>(p.get("cutoff"));
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
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
