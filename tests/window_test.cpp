// Keyed windows: hand-computed results, and every form against a brute-force
// reference on random input.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <unordered_map>
#include <vector>

#include "troupe/detail/key_table.hpp"
#include "troupe/troupe.hpp"

namespace st = troupe::stream;

namespace {

struct reading {
  int sensor;
  std::uint64_t time;
  int value;
};

using result = st::window_result<int, long>;

long sum_of(std::span<const reading> w) {
  long s = 0;
  for (auto& r : w) s += r.value;
  return s;
}

// Runs `window` over `input` in a graph (the window in a farm by sensor, so
// keys spread over replicas) and returns its results sorted.
template <class W>
std::vector<result> run(const std::vector<reading>& input, W window, std::size_t replicas = 1) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  std::vector<result> out;
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{st::source([&input, i = std::size_t{0}]() mutable -> std::optional<reading> {
                              if (i == input.size()) return std::nullopt;
                              return input[i++];
                            }),
                            troupe::farm{window, replicas, troupe::by_key{[](const reading& r) { return r.sensor; }}},
                            st::sink([&](result r) { out.push_back(r); })});
  g.wait();
  std::sort(out.begin(), out.end(), [](const result& a, const result& b) {
    return std::tie(a.key, a.start, a.end, a.value) < std::tie(b.key, b.start, b.end, b.value);
  });
  return out;
}

auto sensor = [](const reading& r) { return r.sensor; };
auto time_of = [](const reading& r) { return r.time; };
auto add = [](long& acc, const reading& r) { acc += r.value; };
auto whole = [](const int&, std::span<const reading> w) { return sum_of(w); };

// Brute force: every window of every key, from the definition.
std::vector<result> reference(const std::vector<reading>& input, std::uint64_t size, std::uint64_t slide,
                              bool by_time) {
  std::map<int, std::vector<reading>> keys;
  for (auto& r : input) keys[r.sensor].push_back(r);
  std::vector<result> out;
  for (auto& [k, rs] : keys) {
    const std::uint64_t last = by_time ? rs.back().time : rs.size() - 1;
    for (std::uint64_t w = 0; w * slide <= last; ++w) {
      const std::uint64_t start = w * slide, end = start + size;
      long s = 0;
      std::uint64_t n = 0;
      for (std::uint64_t i = 0; i < rs.size(); ++i) {
        const std::uint64_t pos = by_time ? rs[i].time : i;
        if (pos >= start && pos < end) s += rs[i].value, ++n;
      }
      if (n == 0) continue;
      // Count windows cut short by the end of the stream end after their last element.
      const std::uint64_t e = by_time ? end : std::min<std::uint64_t>(end, rs.size());
      out.push_back(result{k, start, e, s});
    }
  }
  std::sort(out.begin(), out.end(), [](const result& a, const result& b) {
    return std::tie(a.key, a.start, a.end, a.value) < std::tie(b.key, b.start, b.end, b.value);
  });
  return out;
}

}  // namespace

TEST(window, count_tumbling_by_hand) {
  // sensor 1: values 1..7, sensor 2: values 10, 20, 30 (interleaved)
  std::vector<reading> in{{1, 0, 1}, {2, 0, 10}, {1, 0, 2},  {1, 0, 3}, {2, 0, 20},
                          {1, 0, 4}, {1, 0, 5},  {2, 0, 30}, {1, 0, 6}, {1, 0, 7}};
  std::vector<result> want{{1, 0, 3, 6}, {1, 3, 6, 15}, {1, 6, 7, 7}, {2, 0, 3, 60}};
  EXPECT_EQ(run(in, st::count_window<reading>(sensor, 3, 3, whole)), want);
  EXPECT_EQ(run(in, st::count_window_incremental<reading>(sensor, 3, 3, 0L, add)), want);
}

TEST(window, count_sliding_by_hand) {
  std::vector<reading> in;
  for (int v = 1; v <= 6; ++v) in.push_back({7, 0, v});
  // size 4, slide 2: [1..4]=10, [3..6]=18, then at the end [5,6]=11
  std::vector<result> want{{7, 0, 4, 10}, {7, 2, 6, 18}, {7, 4, 6, 11}};
  EXPECT_EQ(run(in, st::count_window<reading>(sensor, 4, 2, whole)), want);
  EXPECT_EQ(run(in, st::count_window_incremental<reading>(sensor, 4, 2, 0L, add)), want);
}

TEST(window, time_tumbling_and_sliding_by_hand) {
  std::vector<reading> in{{1, 1, 1}, {1, 4, 2}, {1, 9, 3}, {1, 10, 4}, {1, 17, 5}, {1, 31, 6}};
  // tumbling 10: [0,10)=6, [10,20)=9, [30,40)=6 (the empty [20,30) does not fire)
  std::vector<result> tumbling{{1, 0, 10, 6}, {1, 10, 20, 9}, {1, 30, 40, 6}};
  EXPECT_EQ(run(in, st::time_window<reading>(sensor, time_of, 10, 10, whole)), tumbling);
  EXPECT_EQ(run(in, st::time_window_incremental<reading>(sensor, time_of, 10, 10, 0L, add)), tumbling);
  // sliding 10 every 5: [0,10)=6 [5,15)=7 [10,20)=9 [15,25)=5 [25,35)=6 [30,40)=6
  std::vector<result> sliding{{1, 0, 10, 6},  {1, 5, 15, 7},  {1, 10, 20, 9},
                              {1, 15, 25, 5}, {1, 25, 35, 6}, {1, 30, 40, 6}};
  EXPECT_EQ(run(in, st::time_window<reading>(sensor, time_of, 10, 5, whole)), sliding);
  EXPECT_EQ(run(in, st::time_window_incremental<reading>(sensor, time_of, 10, 5, 0L, add)), sliding);
}

TEST(window, late_elements_are_dropped_and_counted) {
  std::vector<reading> in{{1, 5, 1}, {1, 12, 2}, {1, 3, 100}, {1, 14, 3}};
  auto w = st::time_window<reading>(sensor, time_of, 10, 10, whole);
  std::vector<result> want{{1, 0, 10, 1}, {1, 10, 20, 5}};
  EXPECT_EQ(run(in, w), want);
  EXPECT_EQ(w.late(), 1u);
  auto wi = st::time_window_incremental<reading>(sensor, time_of, 10, 10, 0L, add);
  EXPECT_EQ(run(in, wi), want);
  EXPECT_EQ(wi.late(), 1u);
}

TEST(window, bad_sizes_are_rejected) {
  EXPECT_THROW(st::count_window<reading>(sensor, 0, 1, whole), std::invalid_argument);
  EXPECT_THROW(st::count_window_incremental<reading>(sensor, 4, 0, 0L, add), std::invalid_argument);
  EXPECT_THROW(st::time_window<reading>(sensor, time_of, 10, 0, whole), std::invalid_argument);
}

TEST(window, every_form_matches_the_reference_on_random_input) {
  std::mt19937 rng{42};
  std::vector<reading> in;
  std::uint64_t t = 0;
  for (int i = 0; i < 3000; ++i) {
    t += rng() % 4;  // non-decreasing times, with repeats
    in.push_back({static_cast<int>(rng() % 7), t, static_cast<int>(rng() % 100)});
  }
  struct shape {
    std::uint64_t size, slide;
  };
  for (auto [size, slide] : {shape{5, 5}, shape{8, 3}, shape{4, 6}, shape{1, 1}, shape{50, 1}}) {
    SCOPED_TRACE(testing::Message() << "size " << size << " slide " << slide);
    auto by_count = reference(in, size, slide, false);
    EXPECT_EQ(run(in, st::count_window<reading>(sensor, size, slide, whole), 3), by_count);
    EXPECT_EQ(run(in, st::count_window_incremental<reading>(sensor, size, slide, 0L, add), 3), by_count);
    auto by_time = reference(in, size, slide, true);
    EXPECT_EQ(run(in, st::time_window<reading>(sensor, time_of, size, slide, whole), 3), by_time);
    EXPECT_EQ(run(in, st::time_window_incremental<reading>(sensor, time_of, size, slide, 0L, add), 3), by_time);
  }
}

// The windows' keyed state: inserts, lookups and erases against std::unordered_map,
// with keys that collide in std::hash's low bits and enough of them to grow.
TEST(window, key_table_matches_unordered_map) {
  troupe::detail::key_table<std::uint64_t, int> table;
  std::unordered_map<std::uint64_t, int> want;
  std::mt19937 rng{7};
  auto key = [&] { return static_cast<std::uint64_t>(rng() % 5000) << 12; };
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 20000; ++i) {
      const auto k = key();
      if (rng() % 4 == 0) {
        auto* e = table.find(k, table.hash(k));
        EXPECT_EQ(e != nullptr, want.count(k) == 1);
        if (e != nullptr) {
          table.erase_at(static_cast<std::size_t>(e - &table[0]));
          want.erase(k);
        }
      } else {
        ++table.find_or_insert(k, table.hash(k), [] { return 0; }).value;
        ++want[k];
      }
    }
    ASSERT_EQ(table.size(), want.size());
    for (auto& e : table) EXPECT_EQ(want.at(e.key), e.value);
    for (auto& [k, n] : want) {
      auto* e = table.find(k, table.hash(k));
      ASSERT_NE(e, nullptr);
      EXPECT_EQ(e->value, n);
    }
    if (round == 1) {
      table.clear();  // keeps its memory; refilled by the last round
      want.clear();
      EXPECT_EQ(table.find(1, table.hash(1)), nullptr);
    }
  }
}
