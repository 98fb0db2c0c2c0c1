// spsc_ring: bounded SPSC channel of values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "troupe/util/spsc_ring.hpp"

TEST(spsc_ring, capacity_is_a_power_of_two_and_full_is_refused) {
  troupe::spsc_ring<int> r{5};
  EXPECT_EQ(r.capacity(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(r.try_push(i));
  EXPECT_FALSE(r.try_push(99));
  EXPECT_EQ(r.size(), 8u);
  int v = -1;
  EXPECT_TRUE(r.try_pop(v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(r.try_push(8));
  for (int i = 1; i <= 8; ++i) {
    ASSERT_TRUE(r.try_pop(v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(r.try_pop(v));
  EXPECT_TRUE(r.empty());
}

TEST(spsc_ring, move_only_values_and_destruction_of_leftovers) {
  auto counter = std::make_shared<int>(0);
  {
    troupe::spsc_ring<std::unique_ptr<std::shared_ptr<int>>> r{4};
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(r.try_emplace(std::make_unique<std::shared_ptr<int>>(counter)));
    EXPECT_EQ(counter.use_count(), 4);
    auto* front = r.front();
    ASSERT_NE(front, nullptr);
    EXPECT_EQ(**front, counter);
    r.pop();
    EXPECT_EQ(counter.use_count(), 3);
  }  // two left in the ring: destroyed with it
  EXPECT_EQ(counter.use_count(), 1);
}

namespace {
// The consumer side of the two-thread tests: 0 .. n-1 in order.
void expect_in_order(troupe::spsc_ring<std::int64_t>& r, std::int64_t n) {
  std::int64_t expected = 0, v = 0;
  while (expected < n) {
    if (r.try_pop(v)) {
      ASSERT_EQ(v, expected);
      ++expected;
    } else {
      std::this_thread::yield();
    }
  }
}
}  // namespace

TEST(spsc_ring, unpublished_values_are_invisible_until_publish_and_count_as_pushed) {
  troupe::spsc_ring<int> r{4};
  EXPECT_FALSE(r.publish());  // nothing to publish
  EXPECT_TRUE(r.try_emplace_unpublished(1));
  EXPECT_TRUE(r.try_emplace_unpublished(2));
  EXPECT_EQ(r.unpublished(), 2u);
  EXPECT_EQ(r.pushed_size(), 2u);
  EXPECT_EQ(r.size(), 0u);  // the consumer's view
  EXPECT_EQ(r.front(), nullptr);
  EXPECT_TRUE(r.publish());
  EXPECT_EQ(r.unpublished(), 0u);
  EXPECT_EQ(r.size(), 2u);
  // Full counts the unpublished ones too; a plain push publishes them all.
  EXPECT_TRUE(r.try_emplace_unpublished(3));
  EXPECT_TRUE(r.try_push(4));
  EXPECT_FALSE(r.try_emplace_unpublished(5));
  EXPECT_EQ(r.size(), 4u);
  int v = 0;
  for (int i = 1; i <= 4; ++i) {
    ASSERT_TRUE(r.try_pop(v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(r.try_pop(v));
}

TEST(spsc_ring, unpublished_leftovers_are_destroyed_with_the_ring) {
  auto counter = std::make_shared<int>(0);
  {
    troupe::spsc_ring<std::shared_ptr<int>> r{4};
    EXPECT_TRUE(r.try_push(counter));
    EXPECT_TRUE(r.try_emplace_unpublished(counter));
    EXPECT_EQ(counter.use_count(), 3);
  }
  EXPECT_EQ(counter.use_count(), 1);
}

TEST(spsc_ring, two_threads_pass_every_value_in_order_when_published_in_groups) {
  constexpr std::int64_t n = 1'000'000;
  troupe::spsc_ring<std::int64_t> r{64};
  std::thread producer{[&] {
    for (std::int64_t i = 0; i < n;) {
      if (r.try_emplace_unpublished(i)) {
        ++i;
        if (r.unpublished() == 7) r.publish();
      } else {
        r.publish();  // full: the consumer must see what there is
        std::this_thread::yield();
      }
    }
    r.publish();
  }};
  expect_in_order(r, n);
  producer.join();
}

TEST(spsc_ring, two_threads_pass_every_value_in_order) {
  constexpr std::int64_t n = 2'000'000;
  troupe::spsc_ring<std::int64_t> r{1024};
  std::thread producer{[&] {
    for (std::int64_t i = 0; i < n;)
      if (r.try_push(i)) ++i;
      else std::this_thread::yield();
  }};
  expect_in_order(r, n);
  producer.join();
  EXPECT_TRUE(r.empty());
}

TEST(spsc_ring, strings_survive_wrap_around) {
  troupe::spsc_ring<std::string> r{2};
  std::string out;
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(r.try_push(std::string(static_cast<std::size_t>(i % 40), 'x') + std::to_string(i)));
    ASSERT_TRUE(r.try_pop(out));
    EXPECT_EQ(out, std::string(static_cast<std::size_t>(i % 40), 'x') + std::to_string(i));
  }
}

TEST(spsc_ring, runs_are_pushed_as_far_as_they_fit_and_consumed_across_the_wrap) {
  troupe::spsc_ring<std::string> r{8};
  auto text = [](int i) { return std::string(static_cast<std::size_t>(20 + i % 7), 'w') + std::to_string(i); };
  std::vector<std::string> in;
  for (int i = 0; i < 6; ++i) in.push_back(text(i));
  EXPECT_EQ(r.push_run_unpublished(in.data(), in.size()), 6u);
  EXPECT_TRUE(r.empty());  // not published yet
  EXPECT_TRUE(r.publish());
  std::vector<std::string> out;
  auto take = [&out](std::string* from, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(std::move(from[i]));
  };
  EXPECT_EQ(r.consume_runs(4, take), 4u);  // slots 0-3
  // 2 left; a run of 9 fills the 6 free slots (across the wrap) and stops.
  in.clear();
  for (int i = 6; i < 15; ++i) in.push_back(text(i));
  EXPECT_EQ(r.push_run_unpublished(in.data(), in.size()), 6u);
  EXPECT_EQ(r.push_run_unpublished(in.data() + 6, 3), 0u);  // full
  r.publish();
  std::size_t calls = 0;
  EXPECT_EQ(r.consume_runs(100,
                           [&](std::string* from, std::size_t n) {
                             ++calls;
                             take(from, n);
                           }),
            8u);
  EXPECT_EQ(calls, 2u);  // two runs: slots 4-7, then 0-3
  ASSERT_EQ(out.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(out[static_cast<std::size_t>(i)], text(i));
  EXPECT_EQ(r.consume_runs(100, take), 0u);
  EXPECT_EQ(r.push_run_unpublished(in.data() + 6, 3), 3u);  // the leftovers are destroyed with the ring
}

TEST(spsc_ring, two_threads_pass_every_value_in_order_in_runs) {
  constexpr std::int64_t n = 1'000'000;
  troupe::spsc_ring<std::int64_t> r{64};
  std::thread producer{[&] {
    std::vector<std::int64_t> run(37);
    for (std::int64_t i = 0; i < n;) {
      const auto k = static_cast<std::size_t>(std::min<std::int64_t>(37, n - i));
      for (std::size_t j = 0; j < k; ++j) run[j] = i + static_cast<std::int64_t>(j);
      std::size_t done = 0;
      while (done < k) {
        done += r.push_run_unpublished(run.data() + done, k - done);
        r.publish();
        if (done < k) std::this_thread::yield();
      }
      i += static_cast<std::int64_t>(k);
    }
  }};
  std::int64_t next = 0;
  bool in_order = true;
  while (next < n) {
    const auto got = r.consume_runs(23, [&](std::int64_t* from, std::size_t k) {
      for (std::size_t j = 0; j < k; ++j) in_order = in_order && from[j] == next + static_cast<std::int64_t>(j);
      next += static_cast<std::int64_t>(k);
    });
    if (got == 0) std::this_thread::yield();
  }
  producer.join();
  EXPECT_TRUE(in_order);
  EXPECT_EQ(next, n);
  EXPECT_TRUE(r.empty());
}
