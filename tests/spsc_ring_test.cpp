// spsc_ring: bounded SPSC channel of values.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

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
