// Groups (1:N publish/subscribe), the registry, delayed send.
#include <gtest/gtest.h>

#include <atomic>

#include "troupe/troupe.hpp"

using namespace std::chrono_literals;
using troupe::behavior;
using troupe::event_actor;

namespace {
struct joined_atom {};
}  // namespace

TEST(group, every_subscriber_gets_every_message) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto g = sys.groups().get("news");
  EXPECT_EQ(sys.groups().get("news"), g);
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  constexpr int subscribers = 10;
  static constexpr int messages = 100;
  for (int i = 0; i < subscribers; ++i)
    sys.spawn([g, me](event_actor& self) {
      self.join(g);
      self.send(me, joined_atom{});
      return behavior{[&self, me, n = 0](int) mutable {
        if (++n == messages) {
          self.send(me, n);
          self.quit();  // leaves the group on exit
        }
      }};
    });
  for (int i = 0; i < subscribers; ++i) self->receive([](joined_atom) {});
  EXPECT_EQ(g.subscriber_count(), static_cast<std::size_t>(subscribers));
  for (int m = 0; m < messages; ++m) self->send(g, m);
  for (int i = 0; i < subscribers; ++i) self->receive([](int n) { EXPECT_EQ(n, messages); });
  for (int i = 0; i < 2000 && g.subscriber_count() != 0; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(g.subscriber_count(), 0u);
}

TEST(registry, put_get_erase) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  auto a = sys.spawn([](event_actor&) { return behavior{[](int x) { return x + 1; }}; });
  sys.registry().put("adder", a);
  EXPECT_EQ(sys.registry().get("adder"), a);
  EXPECT_FALSE(sys.registry().get("nobody"));
  troupe::scoped_actor self{sys};
  int got = 0;
  self->request(sys.registry().get("adder"), 5s, 1).receive([&](int v) { got = v; }, [](troupe::error&) {});
  EXPECT_EQ(got, 2);
  EXPECT_TRUE(sys.registry().erase("adder"));
  EXPECT_FALSE(sys.registry().erase("adder"));
}

TEST(timer, delayed_send_arrives_after_the_delay) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::scoped_actor self{sys};
  auto t0 = std::chrono::steady_clock::now();
  sys.delayed_send(self.handle(), 30ms, 5);
  int got = 0;
  self->receive([&](int v) { got = v; });
  EXPECT_EQ(got, 5);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 30ms);  // ordering guarantee, not a speed claim
}

TEST(timer, actor_delayed_self_send_ticks) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  sys.spawn([me](event_actor& self) {
    self.delayed_send(self.self(), 1ms, 0);
    return behavior{[&self, me](int n) {
      if (n == 5) {
        self.send(me, n);
        self.quit();
      } else {
        self.delayed_send(self.self(), 1ms, n + 1);
      }
    }};
  });
  int got = 0;
  self->receive([&](int v) { got = v; });
  EXPECT_EQ(got, 5);
}

TEST(timer, pending_timers_at_shutdown_are_counted_not_lost_silently) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  auto a = sys.spawn([](event_actor&) { return behavior{[](int) {}}; });
  sys.delayed_send(a, 1h, 1);
  sys.shutdown();
  EXPECT_EQ(sys.dead_letters(), 1u);
}
