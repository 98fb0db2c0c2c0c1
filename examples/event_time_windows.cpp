// Event time: the three most viewed pages of each second, from page views
// that arrive up to 50 ms out of order. The source puts watermarks after its
// views; a farm of tumbling windows counts each page's views per second and
// closes a second for every page once the watermark has passed its end; the
// sink ranks a second when its own watermark says every count of it is in,
// and forgets it (without watermarks it would have to keep every second
// until the end of the stream).
#include <troupe/troupe.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace st = troupe::stream;

struct view {
  int page;
  std::uint64_t time_ms;
};
using page_count = st::window_result<int, long>;  // {page, start, end, views}

// [top_k]
// The sink: counts of one second arrive from every window replica; the
// watermark says when they all have.
struct top_k : st::node<page_count, void> {
  std::map<std::uint64_t, std::vector<page_count>> open;  // by second
  std::vector<std::string>* ranking = nullptr;
  std::size_t* ranked_early = nullptr;

  void consume(page_count& c) { open[c.start].push_back(c); }
  void on_watermark(std::uint64_t w) {
    while (!open.empty() && open.begin()->first + 1000 <= w) {
      rank(open.begin()->first);
      ++*ranked_early;
    }
  }
  void on_stop() {
    while (!open.empty()) rank(open.begin()->first);
  }
  void rank(std::uint64_t second) {
    auto& counts = open[second];
    std::sort(counts.begin(), counts.end(), [](const page_count& a, const page_count& b) {
      return a.value != b.value ? a.value > b.value : a.key < b.key;
    });
    std::string line = "second " + std::to_string(second / 1000) + ":";
    for (std::size_t i = 0; i < std::min<std::size_t>(3, counts.size()); ++i)
      line += " page " + std::to_string(counts[i].key) + " (" + std::to_string(counts[i].value) + ")";
    ranking->push_back(line);
    open.erase(second);
  }
};
// [/top_k]

// 20 000 views over 10 s, the popular pages more often, each stamped up to 49 ms late.
std::vector<view> make_views() {
  std::vector<view> views;
  std::uint64_t x = 42;
  for (std::uint64_t i = 0; i < 20'000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const auto r = static_cast<int>(x >> 33);
    views.push_back(view{r % 20 < 10 ? r % 5 : r % 20, i / 2 - std::min<std::uint64_t>(i / 2, (x >> 20) % 50)});
  }
  return views;
}

// The same ranking, computed directly.
std::vector<std::string> expected(const std::vector<view>& views) {
  std::map<std::uint64_t, std::map<int, long>> counts;
  for (auto& v : views) ++counts[v.time_ms / 1000 * 1000][v.page];
  std::vector<std::string> lines;
  std::size_t unused = 0;
  top_k k;
  k.ranking = &lines;
  k.ranked_early = &unused;
  for (auto& [second, pages] : counts)
    for (auto& [page, n] : pages) k.open[second].push_back(page_count{page, second, second + 1000, n});
  k.on_stop();
  return lines;
}

int main() {
  const auto views = make_views();
  std::vector<std::string> ranking;
  std::size_t ranked_early = 0;

  troupe::actor_system sys;
  // [graph]
  top_k sink;
  sink.ranking = &ranking;
  sink.ranked_early = &ranked_early;
  auto per_second =
      st::time_window_incremental<view>(&view::page, &view::time_ms, 1000, 1000, 0L, [](long& n, const view&) { ++n; });
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{st::with_watermarks(st::source([&, i = std::size_t{0}]() mutable -> std::optional<view> {
                                                  if (i == views.size()) return std::nullopt;
                                                  return views[i++];
                                                }),
                                                &view::time_ms, {.out_of_orderness = 50}),
                            troupe::farm{per_second, 2, troupe::by_key{&view::page}}, sink});
  g.wait();
  // [/graph]

  for (auto& line : ranking) std::printf("%s\n", line.c_str());
  std::printf("%zu of %zu seconds ranked on a watermark, before the end of the stream; late views: %llu\n",
              ranked_early, ranking.size(), static_cast<unsigned long long>(per_second.late()));
  return ranking == expected(views) && per_second.late() == 0 ? 0 : 1;
}
