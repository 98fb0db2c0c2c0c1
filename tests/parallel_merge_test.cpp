// parallel_merge: the same output as std::merge (stable), from main, from a
// task and from a divide & conquer combine (a merge sort that alternates
// between the array and one buffer).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "troupe/troupe.hpp"

namespace {

std::vector<int> sorted_ints(std::size_t n, unsigned seed, int range) {
  std::mt19937 rng{seed};
  std::vector<int> v(n);
  for (auto& x : v) x = static_cast<int>(rng() % static_cast<unsigned>(range));
  std::sort(v.begin(), v.end());
  return v;
}

// A key and where the element came from: equal keys show the merge's order.
struct tagged {
  int key = 0;
  int from = 0;  // 1: first range, 2: second range
  std::size_t at = 0;
  bool operator==(const tagged&) const = default;
};

std::vector<tagged> tag(const std::vector<int>& keys, int from) {
  std::vector<tagged> v;
  for (std::size_t i = 0; i < keys.size(); ++i) v.push_back({keys[i], from, i});
  return v;
}

}  // namespace

TEST(parallel_merge, equals_std_merge_for_every_split) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const std::pair<std::size_t, std::size_t> sizes[] = {{0, 0},      {0, 5000},      {5000, 0},       {1, 1},
                                                       {1, 10'000}, {10'000, 1},    {7, 9},          {4096, 4096},
                                                       {20'000, 3}, {3333, 12'345}, {50'000, 50'001}};
  for (auto [n1, n2] : sizes)
    for (std::size_t grain : {std::size_t{1}, std::size_t{64}, troupe::default_merge_grain}) {
      auto a = sorted_ints(n1, static_cast<unsigned>(n1 + 1), 1 << 20);
      auto b = sorted_ints(n2, static_cast<unsigned>(n2 + 2), 1 << 20);
      std::vector<int> expected(n1 + n2), got(n1 + n2, -1);
      std::merge(a.begin(), a.end(), b.begin(), b.end(), expected.begin());
      auto end = troupe::parallel_merge(sys, a.begin(), a.end(), b.begin(), b.end(), got.begin(), std::less<>{}, grain);
      EXPECT_EQ(end, got.end()) << n1 << " + " << n2 << ", grain " << grain;
      EXPECT_EQ(got, expected) << n1 << " + " << n2 << ", grain " << grain;
    }
}

TEST(parallel_merge, is_stable_like_std_merge) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  // Few distinct keys: long runs of equal keys straddle the pieces' borders.
  auto a = tag(sorted_ints(30'000, 1, 5), 1);
  auto b = tag(sorted_ints(20'000, 2, 5), 2);
  auto by_key = [](const tagged& x, const tagged& y) { return x.key < y.key; };
  std::vector<tagged> expected(a.size() + b.size()), got(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), expected.begin(), by_key);
  troupe::parallel_merge(sys, a, b, got.begin(), by_key, 100);
  EXPECT_EQ(got, expected);
}

TEST(parallel_merge, a_descending_order_with_a_custom_comparator) {
  troupe::actor_system sys{troupe::config{.workers = 3}};
  auto a = sorted_ints(40'000, 3, 1000);
  auto b = sorted_ints(25'000, 4, 1000);
  std::reverse(a.begin(), a.end());
  std::reverse(b.begin(), b.end());
  std::vector<int> expected(a.size() + b.size()), got(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), expected.begin(), std::greater<>{});
  troupe::parallel_merge(sys, a, b, got.begin(), std::greater<>{}, 1000);
  EXPECT_EQ(got, expected);
}

TEST(parallel_merge, an_exception_of_the_comparator_reaches_the_caller) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto a = sorted_ints(10'000, 5, 1 << 20);
  auto b = sorted_ints(10'000, 6, 1 << 20);
  std::vector<int> out(a.size() + b.size());
  auto throwing = [limit = a[a.size() / 2]](int x, int y) {
    if (x > limit && y > limit) throw std::invalid_argument("comparator");
    return x < y;
  };
  EXPECT_THROW(troupe::parallel_merge(sys, a, b, out.begin(), throwing, 100), std::invalid_argument);
  // The system still works afterwards.
  troupe::parallel_merge(sys, a, b, out.begin(), std::less<>{}, 100);
  EXPECT_TRUE(std::is_sorted(out.begin(), out.end()));
}

TEST(parallel_merge, runs_inside_a_task) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto a = sorted_ints(30'000, 7, 1 << 20);
  auto b = sorted_ints(30'000, 8, 1 << 20);
  std::vector<int> expected(a.size() + b.size()), left(a.size() + b.size()), right(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), expected.begin());
  troupe::task_group g{sys};
  g.run([&] { troupe::parallel_merge(sys, a, b, left.begin(), std::less<>{}, 500); });
  troupe::parallel_merge(sys, a, b, right.begin(), std::less<>{}, 500);
  g.wait();
  EXPECT_EQ(left, expected);
  EXPECT_EQ(right, expected);
}

// The combine of a merge sort merges in parallel: each sub-problem says
// whether its sorted result goes to the array or to the buffer, and the
// children of a problem put theirs in the other one (no copy back).
TEST(parallel_merge, in_a_divide_and_conquer_combine_sorts_like_std_sort) {
  for (std::size_t workers : {1u, 2u}) {
    troupe::actor_system sys{troupe::config{.workers = workers}};
    std::mt19937 rng{11};
    std::vector<std::int32_t> v(300'001);
    for (auto& x : v) x = static_cast<std::int32_t>(rng());
    auto expected = v;
    std::sort(expected.begin(), expected.end());
    std::vector<std::int32_t> buffer(v.size());
    struct piece {
      std::span<std::int32_t> data, buffer;
      bool to_buffer = false;  // where the sorted result goes
    };
    auto spec = troupe::dac{.is_base = [](const piece& p) { return p.data.size() <= 5000; },
                            .solve =
                                [](piece p) {
                                  std::sort(p.data.begin(), p.data.end());
                                  if (p.to_buffer) std::copy(p.data.begin(), p.data.end(), p.buffer.begin());
                                  return p;
                                },
                            .divide =
                                [](piece p) {
                                  const auto mid = p.data.size() / 2;
                                  return std::vector<piece>{{p.data.first(mid), p.buffer.first(mid), !p.to_buffer},
                                                            {p.data.subspan(mid), p.buffer.subspan(mid), !p.to_buffer}};
                                },
                            .combine =
                                [&sys](piece p, std::vector<piece> parts) {
                                  const auto mid = parts[0].data.size();
                                  auto from = p.to_buffer ? p.data : p.buffer;  // where the parts' results are
                                  auto to = p.to_buffer ? p.buffer : p.data;
                                  troupe::parallel_merge(sys, from.first(mid), from.subspan(mid), to.begin(),
                                                         std::less<>{}, 2000);
                                  return p;
                                }};
    troupe::divide_and_conquer(sys, piece{v, buffer, false}, spec);
    EXPECT_EQ(v, expected) << workers << " workers";
  }
}
