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

namespace {
// A push the way an outlet makes it: into the window while it has room
// (a store, no test of room, wrap or group), else try_emplace_unpublished,
// then publish when a group is due.
template <class T>
bool push_grouped(troupe::spsc_ring<T>& r, T v) {
  auto& w = r.producer_window();
  if (w.cur != w.end) {
    ::new (static_cast<void*>(w.cur)) T(std::move(v));
    ++w.cur;
    return true;
  }
  if (!r.try_emplace_unpublished(std::move(v))) return false;
  if (r.group_due()) r.publish_pending();
  return true;
}
// How many pushes the window takes before its end.
template <class T>
std::size_t window_room(troupe::spsc_ring<T>& r) {
  auto& w = r.producer_window();
  return static_cast<std::size_t>(w.end - w.cur);
}
}  // namespace

TEST(spsc_ring, the_window_stops_before_the_push_that_completes_a_group_and_never_passes_the_consumer) {
  troupe::spsc_ring<int> r{16};
  r.set_publish_group(4);
  EXPECT_EQ(window_room(r), 3u);  // the 4th push completes the group: it goes through the slow path
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(push_grouped(r, i));
  EXPECT_EQ(window_room(r), 0u);
  EXPECT_EQ(r.unpublished(), 3u);  // window pushes count as pushed, unpublished
  EXPECT_EQ(r.pushed_total(), 3u);
  EXPECT_FALSE(r.group_due());
  EXPECT_EQ(r.size(), 0u);
  ASSERT_TRUE(push_grouped(r, 3));  // completes the group: published
  EXPECT_EQ(r.size(), 4u);
  EXPECT_EQ(r.unpublished(), 0u);
  EXPECT_EQ(window_room(r), 3u);  // the next group's window
  // Fill up: no push gets past the consumer, whatever the group.
  int pushed = 4;
  while (push_grouped(r, pushed)) ++pushed;
  EXPECT_EQ(pushed, 16);
  EXPECT_EQ(window_room(r), 0u);
  r.publish();
  EXPECT_EQ(r.size(), 16u);
  int v = -1;
  ASSERT_TRUE(r.try_pop(v));
  EXPECT_EQ(v, 0);
  ASSERT_TRUE(push_grouped(r, 16));  // one slot freed: one push, across the wrap
  EXPECT_FALSE(push_grouped(r, 17));
  r.publish();
  for (int i = 1; i <= 16; ++i) {
    ASSERT_TRUE(r.try_pop(v));
    EXPECT_EQ(v, i);
  }
  EXPECT_FALSE(r.try_pop(v));
}

TEST(spsc_ring, a_group_of_one_publishes_every_push_and_runs_move_the_window) {
  troupe::spsc_ring<std::string> r{8};
  EXPECT_EQ(window_room(r), 0u);  // group 1 (the default): every push is a group's last
  ASSERT_TRUE(push_grouped(r, std::string{"a"}));
  EXPECT_EQ(r.size(), 1u);
  r.set_publish_group(100);  // larger than the ring: the window ends at the consumer
  EXPECT_EQ(window_room(r), 7u);
  ASSERT_TRUE(push_grouped(r, std::string{"b"}));
  std::vector<std::string> run{"c", "d", "e"};
  EXPECT_EQ(r.push_run_unpublished(run.data(), run.size()), 3u);
  EXPECT_EQ(window_room(r), 3u);  // after the run's slots
  ASSERT_TRUE(push_grouped(r, std::string{"f"}));
  EXPECT_EQ(r.pushed_total(), 6u);
  EXPECT_EQ(r.unpublished(), 5u);
  r.publish();
  std::string out;
  for (const char* want : {"a", "b", "c", "d", "e", "f"}) {
    ASSERT_TRUE(r.try_pop(out));
    EXPECT_EQ(out, want);
  }
}

TEST(spsc_ring, consume_stops_where_asked_across_the_wrap_and_frees_only_what_it_saw) {
  troupe::spsc_ring<std::string> r{8};
  auto text = [](int i) { return std::string(30, 'c') + std::to_string(i); };
  int next_in = 0, next_out = 0;
  for (int round = 0; round < 40; ++round) {
    while (r.pushed_size() < 8) ASSERT_TRUE(r.try_emplace_unpublished(text(next_in++)));
    r.publish();
    // Stop after a number of values that moves around the ring (and across
    // its end): the values after it stay, in order.
    // A call sees the values its cached view of the producer's index
    // holds, so it may end sooner: it is called again.
    const int stop_after = 1 + round % 7;
    int seen = 0;
    while (seen < stop_after) {
      const int before = seen;
      const auto got = r.consume(8, [&](std::string& s) {
        EXPECT_EQ(s, text(next_out + seen));
        return ++seen < stop_after;
      });
      ASSERT_NE(got, 0u);
      EXPECT_EQ(got, static_cast<std::size_t>(seen - before));  // it frees what it saw
    }
    next_out += stop_after;
    EXPECT_EQ(r.size(), static_cast<std::size_t>(8 - stop_after));
  }
  while (r.consume(100, [&](std::string& s) {
    EXPECT_EQ(s, text(next_out++));
    return true;
  }) != 0) {
  }
  EXPECT_EQ(next_out, next_in);
  EXPECT_TRUE(r.empty());
}

TEST(spsc_ring, take_runs_hands_runs_across_the_wrap_and_frees_what_was_taken) {
  troupe::spsc_ring<std::string> r{8};
  auto text = [](int i) { return std::string(30, 't') + std::to_string(i); };
  int next_in = 0, next_out = 0;
  for (int round = 0; round < 40; ++round) {
    while (r.pushed_size() < 8) ASSERT_TRUE(r.try_emplace_unpublished(text(next_in++)));
    r.publish();
    // Takes at most `limit` from each run it is handed (destroying them, as
    // take_runs asks): a run taken short ends the call; one taken whole
    // across the end of the array is followed by the run after the wrap.
    const std::size_t limit = 1 + round % 9;
    std::vector<bool> whole;  // per run handed
    const auto got = r.take_runs(8, [&](std::string* first, std::size_t n) {
      EXPECT_GE(n, 1u);
      const std::size_t k = std::min(n, limit);
      for (std::size_t i = 0; i < k; ++i) {
        EXPECT_EQ(first[i], text(next_out++));
        std::destroy_at(first + i);
      }
      whole.push_back(k == n);
      return k;
    });
    ASSERT_NE(got, 0u);
    ASSERT_LE(whole.size(), 2u);
    if (whole.size() == 2) {
      EXPECT_TRUE(whole[0]);  // the run after the wrap only after a whole first
    }
    EXPECT_EQ(r.size(), 8 - got);
    EXPECT_EQ(r.take_runs(0,
                          [](std::string*, std::size_t) -> std::size_t {
                            ADD_FAILURE() << "handed a run when asked for none";
                            return 0;
                          }),
              0u);
  }
  while (r.take_runs(100, [&](std::string* first, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(first[i], text(next_out++));
      std::destroy_at(first + i);
    }
    return n;
  }) != 0) {
  }
  EXPECT_EQ(next_out, next_in);
  EXPECT_TRUE(r.empty());
}

TEST(spsc_ring, two_threads_pass_every_value_in_order_through_the_window) {
  constexpr std::int64_t n = 1'000'000;
  troupe::spsc_ring<std::int64_t> r{64};
  r.set_publish_group(16);
  std::thread producer{[&] {
    for (std::int64_t i = 0; i < n;) {
      if (push_grouped(r, i)) {
        ++i;
      } else {
        r.publish();  // full: the consumer must see what there is
        std::this_thread::yield();
      }
    }
    r.publish();
  }};
  std::int64_t next = 0;
  bool in_order = true;
  while (next < n) {
    // Takes at most 5 per call and sometimes stops early: runs end anywhere.
    const auto got = r.consume(5, [&](std::int64_t& v) {
      in_order = in_order && v == next;
      ++next;
      return v % 11 != 0;
    });
    if (got == 0) std::this_thread::yield();
  }
  producer.join();
  EXPECT_TRUE(in_order);
  EXPECT_EQ(next, n);
  EXPECT_TRUE(r.empty());
}
