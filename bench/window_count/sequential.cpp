// window_count, sequential: one plain loop over the events, a hash map of
// counts per open window (at most two are open: the jitter is far below the
// window size), a window ranked and its map cleared for reuse once the
// largest time seen - out_of_orderness has passed its end.
#include "impls.hpp"

#include <deque>
#include <unordered_map>

namespace bench::window_count {

std::uint64_t sequential_checksum(const std::vector<event>& events, tally* out) {
  using counts = std::unordered_map<std::uint32_t, std::uint64_t>;
  std::deque<std::pair<std::uint64_t, counts>> open;  // window index, counts; by index
  std::vector<counts> spare;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> ranked;
  tally t;
  std::uint64_t max_time = 0;
  auto close_front = [&] {
    auto& [w, c] = open.front();
    ranked.assign(c.begin(), c.end());
    t.rank(w * window_ms, ranked);
    c.clear();
    spare.push_back(std::move(c));
    open.pop_front();
  };
  for (const auto& e : events) {
    const std::uint64_t w = e.time_ms / window_ms;
    auto it = open.begin();
    while (it != open.end() && it->first < w) ++it;
    if (it == open.end() || it->first != w) {
      check(it == open.end(), "sequential: an event for a window already closed");
      counts c;
      if (!spare.empty()) {
        c = std::move(spare.back());
        spare.pop_back();
      }
      it = open.emplace(it, w, std::move(c));
    }
    ++it->second[e.key];
    max_time = std::max(max_time, e.time_ms);
    const std::uint64_t watermark = max_time - std::min(max_time, out_of_orderness);
    while (!open.empty() && (open.front().first + 1) * window_ms <= watermark) close_front();
  }
  while (!open.empty()) close_front();
  if (out) *out = t;
  return t.checksum;
}

}  // namespace bench::window_count

bench::sample bench::run_sequential(const params& p) {
  const auto events = window_count::make_events(p.get("elements"), p.get("keys"));
  window_count::tally t;
  stopwatch sw;
  window_count::sequential_checksum(events, &t);
  sample s;
  s.wall_s = sw.seconds();
  t.check(events);
  return s;
}
