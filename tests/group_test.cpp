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

namespace {
struct go_atom {};
struct seq_msg {
  std::int64_t seq;
};
}  // namespace

// A publisher far ahead of its subscribers is held back (it floods their
// mailboxes) and comes back: every subscriber gets every publication, in
// order, on one worker and on two.
TEST(group, a_flooding_publisher_is_held_back_and_everything_arrives_in_order) {
  for (std::size_t workers : {1, 2}) {
    troupe::actor_system sys{troupe::config{.workers = workers}};
    auto g = sys.groups().get("flood");
    troupe::scoped_actor self{sys};
    auto me = self.handle();
    constexpr int subscribers = 6;
    static constexpr std::int64_t messages = 30'000;
    for (int i = 0; i < subscribers; ++i)
      sys.spawn([g, me](event_actor& s) {
        s.join(g);
        s.send(me, joined_atom{});
        return behavior{[&s, me, next = std::int64_t{0}, bad = std::int64_t{0}](seq_msg m) mutable {
          if (m.seq != next) ++bad;
          next = m.seq + 1;
          for (int k = 0; k < 50; ++k) troupe::cpu_relax();  // a slow subscriber
          if (next == messages) {
            s.send(me, next, bad);
            s.quit();
          }
        }};
      });
    for (int i = 0; i < subscribers; ++i) self->receive([](joined_atom) {});
    sys.spawn([g](event_actor& s) {
      s.send(s.self(), go_atom{});
      return behavior{[&s, g, seq = std::int64_t{0}](go_atom) mutable {
        for (int k = 0; k < 500 && seq < messages; ++k) s.send(g, seq_msg{seq++});
        if (seq < messages) s.send(s.self(), go_atom{});
        else s.quit();
      }};
    });
    for (int i = 0; i < subscribers; ++i)
      self->receive([](std::int64_t n, std::int64_t bad) {
        EXPECT_EQ(n, messages);
        EXPECT_EQ(bad, 0);
      });
  }
}

// Two actors that publish to each other's group faster than the other
// reads: both are held back by the other, and neither waits forever.
TEST(group, two_publishers_flooding_each_other_both_finish) {
  for (std::size_t workers : {1, 2}) {
    troupe::actor_system sys{troupe::config{.workers = workers}};
    auto to_a = sys.groups().get("to_a");
    auto to_b = sys.groups().get("to_b");
    troupe::scoped_actor self{sys};
    auto me = self.handle();
    static constexpr std::int64_t bursts = 20;
    static constexpr std::int64_t burst = 3'000;  // each burst floods the other's mailbox
    auto flooder = [me](event_actor& s, troupe::group in, troupe::group out) {
      s.join(in);
      s.send(me, joined_atom{});
      return behavior{[&s, out, sent = std::int64_t{0}](go_atom) mutable {
                        for (int k = 0; k < burst; ++k) s.send(out, seq_msg{sent++});
                        if (sent < bursts * burst) s.send(s.self(), go_atom{});
                      },
                      [&s, me, got = std::int64_t{0}](seq_msg m) mutable {
                        EXPECT_EQ(m.seq, got);
                        if (++got == bursts * burst) s.send(me, got);
                      }};
    };
    auto a = sys.spawn(flooder, to_a, to_b);
    auto b = sys.spawn(flooder, to_b, to_a);
    for (int i = 0; i < 2; ++i) self->receive([](joined_atom) {});
    self->send(a, go_atom{});
    self->send(b, go_atom{});
    for (int i = 0; i < 2; ++i) self->receive([](std::int64_t got) { EXPECT_EQ(got, bursts * burst); });
    sys.send_exit(a, troupe::error{troupe::errc::user_shutdown, "done"});
    sys.send_exit(b, troupe::error{troupe::errc::user_shutdown, "done"});
  }
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
