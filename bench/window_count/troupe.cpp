// window_count, troupe: source (periodic watermarks) -> farm of count windows
// routed by key -> top-k sink, through the public window API.
#include "impls.hpp"

#include <map>

#include <troupe/troupe.hpp>

#include "common/stream_graph.hpp"

namespace {

namespace st = troupe::stream;
using bench::window_count::event;
using key_count = st::window_result<std::uint32_t, std::uint64_t>;  // {key, start, end, count}

struct source : st::node<void, event> {
  const std::vector<event>* events = nullptr;
  std::size_t i = 0;
  bool produce() {
    if (i == events->size()) return false;
    send_next((*events)[i++]);
    return true;
  }
};

/// Collects each window's counts (from every replica) and ranks a window once
/// the watermark has passed its end: every replica has sent its counts then.
struct top_k : st::node<key_count, void> {
  std::map<std::uint64_t, std::vector<std::pair<std::uint32_t, std::uint64_t>>> open;  // by start
  bench::window_count::tally* t = nullptr;

  void consume(key_count& c) { open[c.start].emplace_back(c.key, c.value); }
  void on_watermark(std::uint64_t w) {
    while (!open.empty() && open.begin()->first + bench::window_count::window_ms <= w) rank_first();
  }
  void on_stop() {
    while (!open.empty()) rank_first();
  }
  void rank_first() {
    t->rank(open.begin()->first, open.begin()->second);
    open.erase(open.begin());
  }
};

}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto events = window_count::make_events(p.get("elements"), p.get("keys"));
  const auto workers = static_cast<std::size_t>(p.get("workers"));
  troupe::actor_system sys{troupe::config{.workers = workers}};
  window_count::tally t;
  source src;
  src.events = &events;
  top_k sink;
  sink.t = &t;
  auto per_window =
      st::time_window_incremental<event>(&event::key, &event::time_ms, window_count::window_ms, window_count::window_ms,
                                         std::uint64_t{0}, [](std::uint64_t& n, const event&) { ++n; });
  auto s = bench::time_graph(
      sys,
      troupe::pipeline{st::with_watermarks(src, &event::time_ms, {.out_of_orderness = window_count::out_of_orderness}),
                       troupe::farm{per_window, workers, troupe::by_key{&event::key}}, sink});
  t.check(events);
  check_eq("late events", 0, static_cast<std::int64_t>(per_window.late()));
  const auto expected = window_count::sequential_checksum(events);
  check(t.checksum == expected, "top-k checksum differs from the sequential loop's");
  return s;
}
