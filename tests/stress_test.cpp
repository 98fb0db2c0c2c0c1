// Stress: every message counted, per-sender order; skynet with 1 M actors.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "troupe/troupe.hpp"

using namespace std::chrono_literals;
using troupe::behavior;
using troupe::event_actor;

namespace {
struct done_atom {};

struct seq_msg {
  int sender;
  std::int64_t seq;
};

void skynet_node(event_actor& self, troupe::actor parent, std::int64_t num, std::int64_t size) {
  if (size == 1) {
    self.send(parent, num);
    self.quit();
    return;
  }
  auto sub = size / 10;
  for (int i = 0; i < 10; ++i) self.spawn(skynet_node, self.self(), num + i * sub, sub);
  self.become(behavior{[&self, parent, sum = std::int64_t{0}, left = 10](std::int64_t v) mutable {
    sum += v;
    if (--left == 0) {
      self.send(parent, sum);
      self.quit();
    }
  }});
}

std::int64_t run_skynet(std::size_t workers, std::int64_t leaves) {
  troupe::actor_system sys{troupe::config{.workers = workers}};
  troupe::scoped_actor self{sys};
  sys.spawn(skynet_node, self.handle(), std::int64_t{0}, leaves);
  std::int64_t result = -1;
  self->receive([&](std::int64_t v) { result = v; });
  return result;
}
}  // namespace

TEST(stress, two_senders_to_one_actor_all_received_in_per_sender_order) {
  constexpr std::int64_t per_sender = 2'000'000;
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  auto sink = sys.spawn([me](event_actor& self) {
    return behavior{[&self, me, next = std::vector<std::int64_t>(2, 0), total = std::int64_t{0},
                     bad = std::int64_t{0}](seq_msg m) mutable {
      if (m.seq != next[m.sender]) ++bad;
      next[m.sender] = m.seq + 1;
      if (++total == 2 * per_sender) self.send(me, total, bad);
    }};
  });
  for (int s = 0; s < 2; ++s)
    sys.spawn(
        [](event_actor& self, troupe::actor sink, int id) {
          // send in chunks so the sender yields the worker between them
          self.become(behavior{[&self, sink, id, i = std::int64_t{0}](done_atom) mutable {
            for (int k = 0; k < 1000 && i < per_sender; ++k) self.send(sink, seq_msg{id, i++});
            if (i < per_sender) self.send(self.self(), done_atom{});
            else self.quit();
          }});
          self.send(self.self(), done_atom{});
        },
        sink, s);
  std::int64_t total = 0, bad = -1;
  self->receive([&](std::int64_t t, std::int64_t b) {
    total = t;
    bad = b;
  });
  EXPECT_EQ(total, 2 * per_sender);
  EXPECT_EQ(bad, 0);
}

TEST(stress, skynet_one_million_actors) { EXPECT_EQ(run_skynet(2, 1'000'000), 499999500000); }

TEST(stress, skynet_on_one_worker) { EXPECT_EQ(run_skynet(1, 100'000), 4999950000); }

TEST(stress, external_threads_send_concurrently) {
  constexpr int threads = 4, per = 50000;
  troupe::actor_system sys{troupe::config{.workers = 2}};
  std::atomic<long> sum{0};
  auto a = sys.spawn([&sum](event_actor&) { return behavior{[&sum](int x) { sum += x; }}; });
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&sys, a] {
      for (int i = 0; i < per; ++i) sys.send(a, 1);
    });
  for (auto& t : ts) t.join();
  sys.shutdown();
  EXPECT_EQ(sum.load(), long{threads} * per);
}

TEST(stress, flood_into_a_slow_receiver_loses_nothing_with_a_small_soft_limit) {
  // One sender loops 50k sends per message into a receiver that works per
  // message; overload control (yield, wait, drain past the budget) must not
  // lose or reorder anything, on one worker and on two.
  for (std::size_t workers : {1u, 2u}) {
    troupe::actor_system sys{troupe::config{.workers = workers, .throughput = 1, .mailbox_soft_limit = 16}};
    troupe::scoped_actor self{sys};
    auto me = self.handle();
    constexpr std::int64_t n = 50'000;
    auto sink = sys.spawn([me](event_actor& self) {
      return behavior{[&self, me, next = std::int64_t{0}, bad = 0](std::int64_t v) mutable {
        if (v != next++) ++bad;
        if (next == n) {
          self.send(me, next, std::int64_t{bad});
          self.quit();
        }
      }};
    });
    sys.spawn([sink](event_actor& self) {
      self.send(self.self(), done_atom{});
      return behavior{[&self, sink](done_atom) {
        for (std::int64_t i = 0; i < n; ++i) self.send(sink, i);
        self.quit();
      }};
    });
    std::int64_t got = 0, bad = -1;
    self->receive([&](std::int64_t g, std::int64_t b) {
      got = g;
      bad = b;
    });
    EXPECT_EQ(got, n);
    EXPECT_EQ(bad, 0);
  }
}
