// window_count: a keyed tumbling event-time window count with a top-k per
// window at the sink (the shape of "most viewed pages per 10 s").
//
// params:
//   elements  events in the stream (quick 2'000'000, full 8'000'000)
//   keys      distinct keys, Zipf-distributed (s = 1), ids scattered over 32 bits (50'000)
//   workers   scheduler threads and window replicas of the troupe impl (1 or 2)
// Input: generated before the measured region from a fixed seed, the same for
// every impl: event i has time i / 5 ms (5 events per ms, so 10 s windows of
// 50'000 events; 2 M events span 40 windows) minus a jitter of 0-49 ms (out
// of order by up to 49 ms).
// impls:
//   troupe      source with periodic watermarks (out_of_orderness 50) ->
//               farm of `workers` st::time_window_incremental count windows
//               (10 s tumbling, routed by key) -> sink that collects each
//               window's counts and ranks a window when its watermark has
//               passed the window's end
//   sequential  one plain loop: a std::unordered_map of counts per open
//               window, a window closed (ranked, its map cleared and reused)
//               once the largest time seen - 50 has passed its end
// Measured region: from the start of the graph (or loop) until every window
// is ranked.
// Figure: elements_per_s. Peak RSS should not grow with `elements` (closed
// windows are forgotten).
// Check: every event counted once (no late event), the number of windows,
// and a checksum over every window's top 10 (count desc, then key asc), in
// window order.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_sequential(const params& p);

namespace window_count {

struct event {
  std::uint32_t key;
  std::uint64_t time_ms;
};

constexpr std::uint64_t window_ms = 10'000;
constexpr std::uint64_t out_of_orderness = 50;
constexpr std::size_t top = 10;

/// The events of a run: Zipf(1) keys, times advancing 1 ms per 5 events with
/// a jitter below out_of_orderness.
inline std::vector<event> make_events(std::int64_t n, std::int64_t keys) {
  std::vector<double> cdf(static_cast<std::size_t>(keys));
  double sum = 0;
  for (std::size_t r = 0; r < cdf.size(); ++r) cdf[r] = sum += 1.0 / static_cast<double>(r + 1);
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  auto next = [&x] {  // splitmix64
    std::uint64_t z = (x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  std::vector<event> out(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const double u = static_cast<double>(next() >> 11) * 0x1.0p-53 * sum;
    const auto rank = static_cast<std::uint32_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
    const std::uint64_t t = i / 5, jitter = next() % out_of_orderness;
    out[i] = event{(std::min<std::uint32_t>(rank, static_cast<std::uint32_t>(keys - 1)) + 1) * 2654435761u,
                   t - std::min(t, jitter)};
  }
  return out;
}

/// What both impls fold every closed window into.
struct tally {
  std::uint64_t windows = 0, counted = 0, checksum = 0;

  /// Window [start, start + window_ms) with its (key, count) pairs, in any order.
  void rank(std::uint64_t start, std::vector<std::pair<std::uint32_t, std::uint64_t>>& counts) {
    ++windows;
    for (auto& c : counts) counted += c.second;
    const auto k = std::min(top, counts.size());
    std::partial_sort(
        counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(k), counts.end(),
        [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    mix(start);
    for (std::size_t i = 0; i < k; ++i) {
      mix(counts[i].first);
      mix(counts[i].second);
    }
  }
  void mix(std::uint64_t v) { checksum = (checksum ^ v) * 0x100000001b3ull + 0x9e3779b9ull; }

  void check(const std::vector<event>& events) const {
    std::uint64_t last = 0;
    for (auto& e : events) last = std::max(last, e.time_ms);
    check_eq("events counted", static_cast<std::int64_t>(events.size()), static_cast<std::int64_t>(counted));
    check_eq("windows ranked", static_cast<std::int64_t>(last / window_ms + 1), static_cast<std::int64_t>(windows));
  }
};

/// The checksum the sequential loop computes for these events (the troupe
/// impl checks its own against it, outside its measured region).
std::uint64_t sequential_checksum(const std::vector<event>& events, tally* t = nullptr);

}  // namespace window_count
}  // namespace bench
