// parallel_merge.hpp: std::merge split into tasks on the work-stealing
// scheduler, for the combine step of a divide & conquer (the last merge of a
// merge sort is the whole array: run sequentially, it bounds the speedup).
//   troupe::parallel_merge(sys, a.begin(), a.end(), b.begin(), b.end(), out.begin());
// Same result as std::merge, stable (of equal elements, those of the first
// range come first). The output is cut into equal pieces; each piece finds
// where it starts in both inputs by a binary search (its co-rank), so the
// pieces merge independently: all but the first are forked, the caller merges
// the first and then helps (a worker) or sleeps (another thread) until done.
// Call it from main, from an actor or from inside a task, e.g. a combine of
// divide_and_conquer. The output must not overlap either input (merge into a
// second buffer; a merge sort alternates between the array and one buffer).
// Don't use it for small merges: below `grain` elements per piece it is
// std::merge on the calling thread.
// Cost: pieces = min(total / grain, 4 x workers) tasks, each two binary
// searches of O(log n) comparisons before its share of the merge; no
// allocation other than the tasks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <functional>
#include <iterator>
#include <ranges>
#include <utility>

#include "troupe/pattern/task_group.hpp"

namespace troupe {

/// Elements per piece below which parallel_merge does not split: about
/// 100 us of std::merge on int, far above the cost of a task.
inline constexpr std::size_t default_merge_grain = std::size_t{1} << 15;

namespace detail {

/// How many of the first `k` elements of the stable merge of a (n1
/// elements) and b (n2) come from a: the largest i with a[i-1] <= b[k-i]
/// (ties go to a).
template <class I1, class I2, class Compare>
std::size_t merge_co_rank(std::size_t k, I1 a, std::size_t n1, I2 b, std::size_t n2, Compare& comp) {
  std::size_t lo = k > n2 ? k - n2 : 0;
  std::size_t hi = k < n1 ? k : n1;
  while (lo < hi) {
    const std::size_t i = lo + (hi - lo + 1) / 2;  // 1 <= i <= n1, 0 <= k - i < n2
    if (comp(b[static_cast<std::ptrdiff_t>(k - i)], a[static_cast<std::ptrdiff_t>(i - 1)])) hi = i - 1;
    else lo = i;
  }
  return lo;
}

}  // namespace detail

/// Merges the sorted ranges [first1, last1) and [first2, last2) into the
/// range starting at `out`, in pieces of at least `grain` elements run as
/// tasks on `sys`; returns the end of the output. See the top of this header.
/// An exception thrown by `comp` (or by copying an element) reaches the
/// caller after every piece has stopped; the output is then unspecified.
template <std::random_access_iterator I1, std::random_access_iterator I2, std::random_access_iterator Out,
          class Compare = std::less<>>
Out parallel_merge(actor_system& sys, I1 first1, I1 last1, I2 first2, I2 last2, Out out, Compare comp = {},
                   std::size_t grain = default_merge_grain) {
  const auto n1 = static_cast<std::size_t>(last1 - first1);
  const auto n2 = static_cast<std::size_t>(last2 - first2);
  const std::size_t total = n1 + n2;
  const std::size_t most = 4 * std::max<std::size_t>(sys.worker_count(), 1);
  const std::size_t pieces = std::min(total / std::max<std::size_t>(grain, 1), most);
  if (pieces <= 1) return std::merge(first1, last1, first2, last2, out, comp);

  // Piece p writes the output [k0, k1) with k = p * total / pieces.
  auto merge_piece = [=, &comp](std::size_t p) {
    const std::size_t k0 = p * total / pieces;
    const std::size_t k1 = (p + 1) * total / pieces;
    const std::size_t i0 = detail::merge_co_rank(k0, first1, n1, first2, n2, comp);
    const std::size_t i1 = detail::merge_co_rank(k1, first1, n1, first2, n2, comp);
    const auto d = [](std::size_t x) { return static_cast<std::ptrdiff_t>(x); };
    std::merge(first1 + d(i0), first1 + d(i1), first2 + d(k0 - i0), first2 + d(k1 - i1), out + d(k0), comp);
  };
  std::exception_ptr error;
  {
    task_group g{sys};
    for (std::size_t p = 1; p < pieces; ++p) g.run([&merge_piece, p] { merge_piece(p); });
    try {
      merge_piece(0);
    } catch (...) {
      error = std::current_exception();
    }
    try {
      g.wait();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  return out + static_cast<std::ptrdiff_t>(total);
}

/// parallel_merge over two sorted ranges (containers, spans) into the range
/// starting at `out`.
template <std::ranges::random_access_range R1, std::ranges::random_access_range R2, std::random_access_iterator Out,
          class Compare = std::less<>>
Out parallel_merge(actor_system& sys, R1&& a, R2&& b, Out out, Compare comp = {},
                   std::size_t grain = default_merge_grain) {
  const auto a0 = std::ranges::begin(a);
  const auto b0 = std::ranges::begin(b);
  return parallel_merge(sys, a0, a0 + std::ranges::distance(a), b0, b0 + std::ranges::distance(b), out, std::move(comp),
                        grain);
}

}  // namespace troupe
