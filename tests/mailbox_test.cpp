// Mailbox: lock-free MPSC queue, length, send_if, urgent priority.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "troupe/detail/mpsc_queue.hpp"
#include "troupe/troupe.hpp"

using namespace std::chrono_literals;
using troupe::behavior;
using troupe::event_actor;

namespace {
struct item : troupe::mpsc_node {
  int producer;
  int seq;
};
struct hold_atom {};
struct release_atom {};
}  // namespace

TEST(mailbox, mpsc_queue_keeps_per_producer_order_under_contention) {
  constexpr int producers = 4, per = 50000;
  troupe::mpsc_queue q;
  std::vector<item> items(producers * per);
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p)
    threads.emplace_back([&, p] {
      for (int i = 0; i < per; ++i) {
        auto& it = items[p * per + i];
        it.producer = p;
        it.seq = i;
        q.push(&it);
      }
    });
  std::vector<int> next(producers, 0);
  int received = 0;
  while (received < producers * per) {
    auto* n = static_cast<item*>(q.pop());
    if (n == nullptr) continue;
    ASSERT_EQ(n->seq, next[n->producer]) << "producer " << n->producer;
    ++next[n->producer];
    ++received;
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(q.pop(), nullptr);
}

TEST(mailbox, length_is_visible_to_senders_and_send_if_respects_the_limit) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  std::atomic<bool> release{false};
  auto slow = sys.spawn([&release](event_actor&) {
    return behavior{[&release](hold_atom) {
                      while (!release.load()) std::this_thread::sleep_for(1ms);
                    },
                    [](int) {}};
  });
  troupe::scoped_actor self{sys};
  self->send(slow, hold_atom{});
  // wait until the actor holds the first message (its count includes it until settled)
  std::this_thread::sleep_for(20ms);
  // The length counts messages not yet finished (the one being handled too).
  auto before = slow->mailbox_size();
  ASSERT_GE(before, 1u);
  ASSERT_LT(before, 5u);
  std::size_t sent = 0;
  for (int i = 0; i < 20; ++i) sent += self->send_if(slow, 5, i) ? 1 : 0;
  EXPECT_EQ(slow->mailbox_size(), 5u);
  EXPECT_EQ(before + sent, 5u);
  release = true;
}

TEST(mailbox, urgent_messages_overtake_normal_ones) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  std::atomic<bool> go{false};
  auto a = sys.spawn([&go, me](event_actor& self) {
    return behavior{[&go](hold_atom) {
                      while (!go.load()) std::this_thread::sleep_for(1ms);
                    },
                    [&self, me](int x) { self.send(me, x); }};
  });
  self->send(a, hold_atom{});
  std::this_thread::sleep_for(20ms);
  for (int i = 1; i <= 3; ++i) self->send(a, i);
  self->send_urgent(a, 100);
  go = true;
  std::vector<int> order;
  for (int i = 0; i < 4; ++i) self->receive([&](int x) { order.push_back(x); });
  EXPECT_EQ(order, (std::vector<int>{100, 1, 2, 3}));
}

TEST(mailbox, send_if_to_ended_actor_reports_false) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::scoped_actor self{sys};
  auto a = sys.spawn([](event_actor& self) { return behavior{[&self](int) { self.quit(); }}; });
  self->monitor(a);
  self->send(a, 1);
  self->receive([](troupe::down_msg&) {});
  EXPECT_FALSE(self->send_if(a, 100, 2));
}

TEST(mailbox, a_receiver_draining_a_backlog_past_its_budget_stops_counting_what_it_handled) {
  // Over its soft limit, a receiver drains past its throughput budget in one
  // activation. Its length must shrink as it goes: senders' overload test, a
  // held publisher and send_if read it, and a backlog already handled must not
  // hold them back.
  troupe::actor_system sys{troupe::config{.workers = 1}};  // throughput 100, soft limit 1024
  constexpr std::size_t n = 5000, probe = 3000, throughput = 100;
  std::atomic<bool> release{false};
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  auto a = sys.spawn([&release, me](event_actor& s) {
    return behavior{[&release](hold_atom) {
                      while (!release.load()) std::this_thread::sleep_for(1ms);
                    },
                    [&s, me](std::size_t i) {
                      if (i == probe) s.send(me, s.mailbox_size());
                    }};
  });
  self->send(a, hold_atom{});
  for (std::size_t i = 0; i < n; ++i) self->send(a, i);
  release = true;
  std::size_t seen = 0;
  self->receive([&](std::size_t length) { seen = length; });
  // After message `probe`: the rest queued, at most one budget handled and not
  // yet settled, and the message being handled.
  EXPECT_LE(seen, n - probe + throughput + 1);
}

// ---- send groups: a handler's messages to one receiver go out as a chain
// (detail::send_group). What must hold whatever the grouping does: the order
// per (sender, receiver), the delivery of everything once the handler has
// returned, the sender references, and dead letters when the receiver ended.

namespace {
struct burst_atom {};
struct mixed_atom {};
struct report_atom {};
struct tagged {
  int path;  // 0: send, 1: send_if, 2: typed send, 3: reply
  int seq;
};
}  // namespace

TEST(mailbox, a_handlers_many_messages_to_one_receiver_arrive_all_and_in_order) {
  // More than one chain's worth (tuning::send_group_max), from two senders
  // on two workers at once, each also sending elsewhere in between.
  constexpr int per_handler = 1000, handlers = 5, senders = 2;
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  auto other = sys.spawn([](event_actor&) { return behavior{[](int, int) {}}; });
  auto receiver = sys.spawn([me](event_actor& s) {
    return behavior{[&s, me, next = std::vector<int>(senders, 0), got = 0, bad = 0](int from, int seq) mutable {
      if (next[static_cast<std::size_t>(from)] != seq) ++bad;
      next[static_cast<std::size_t>(from)] = seq + 1;
      if (++got == per_handler * handlers * senders) s.send(me, got, bad);
    }};
  });
  std::vector<troupe::actor> sources;
  sources.reserve(senders);
  for (int id = 0; id < senders; ++id)
    sources.push_back(sys.spawn(
        [receiver, other](event_actor& s, int id) {
          return behavior{[&s, receiver, other, id, seq = 0](burst_atom) mutable {
            for (int k = 0; k < per_handler; ++k) {
              s.send(receiver, id, seq++);
              if (k % 300 == 299) s.send(other, id, k);  // another receiver in between
            }
          }};
        },
        id));
  for (int h = 0; h < handlers; ++h)
    for (auto& a : sources) self->send(a, burst_atom{});
  int got = 0, bad = -1;
  self->receive([&](int g, int b) {
    got = g;
    bad = b;
  });
  EXPECT_EQ(got, per_handler * handlers * senders);
  EXPECT_EQ(bad, 0);
}

TEST(mailbox, other_ways_of_sending_keep_their_place_among_a_handlers_chained_messages) {
  // A handler sends to one receiver with send (chained), send_if, a request
  // and, last, its reply to that receiver's request: the receiver sees them
  // in that order.
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  auto src = sys.spawn([](event_actor& s) {
    return behavior{[&s](mixed_atom) {
      const auto& sink = s.sender();
      int seq = 0;
      for (int round = 0; round < 3; ++round) {
        for (int k = 0; k < 5; ++k) s.send(sink, tagged{0, seq++});
        EXPECT_TRUE(s.send_if(sink, 1'000'000, tagged{1, seq++}));
        for (int k = 0; k < 3; ++k) s.send(sink, tagged{0, seq++});
        s.request(sink, troupe::infinite, tagged{2, seq++}).then([](int) {});
        for (int k = 0; k < 3; ++k) s.send(sink, tagged{0, seq++});
      }
      return tagged{3, seq};
    }};
  });
  auto sink = sys.spawn([src, me](event_actor& s) {
    auto seen = std::make_shared<std::vector<int>>();
    return behavior{[seen](tagged t) {
                      seen->push_back(t.seq);
                      return 0;
                    },
                    [&s, src, me, seen](report_atom) {
                      s.request(src, troupe::infinite, mixed_atom{}).then([&s, me, seen](tagged last) {
                        seen->push_back(last.seq);
                        s.send(me, *seen);
                      });
                    }};
  });
  self->send(sink, report_atom{});
  std::vector<int> seen;
  self->receive([&](std::vector<int>& v) { seen = v; });
  ASSERT_EQ(seen.size(), 3u * 13 + 1);
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], static_cast<int>(i)) << "position " << i;
}

TEST(mailbox, a_chain_to_a_receiver_that_ended_is_dead_letters_and_its_sender_can_still_end) {
  // The receiver ends while the sender's handler sends to it: what arrives
  // after the end is counted as dead letters, nothing is lost unnoticed, and
  // the sender references its messages held are all given back (the sender
  // ends and is freed: LeakSanitizer and the count's assertions check it).
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  auto receiver = sys.spawn([me](event_actor& s) {
    return behavior{[&s, me, got = 0](int) mutable {
      if (++got == 10) {
        s.send(me, got);
        s.quit();
      }
    }};
  });
  self->monitor(receiver);
  constexpr int total = 500;
  std::atomic<int> handled_by_sender{0};
  auto sender = sys.spawn([&handled_by_sender, receiver](event_actor& s) {
    return behavior{[&s, &handled_by_sender, receiver](burst_atom) {
      for (int k = 0; k < total; ++k) s.send(receiver, k);
      ++handled_by_sender;
      s.quit();
    }};
  });
  self->monitor(sender);
  const auto before = sys.dead_letters();
  self->send(sender, burst_atom{});
  int got = 0;
  self->receive([&](int g) { got = g; });
  for (int i = 0; i < 2; ++i) self->receive([](troupe::down_msg&) {});
  EXPECT_EQ(got, 10);
  EXPECT_EQ(handled_by_sender.load(), 1);
  // Every message past the tenth either waited in the mailbox when it closed
  // or came after: dead letters, all of them.
  EXPECT_EQ(sys.dead_letters() - before, static_cast<std::uint64_t>(total - 10));
}

TEST(mailbox, a_blocking_actors_handler_sends_in_groups_too_and_they_go_when_it_returns) {
  // A scoped actor's receive handler sends 100 messages to one receiver (a
  // chain from the second on); its thread then only waits. The chain must
  // have gone when the handler returned: the receiver answers once it has
  // all 100, in order.
  constexpr int n = 100;
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  auto receiver = sys.spawn([me](event_actor& s) {
    return behavior{[&s, me, next = 0, bad = 0](int seq) mutable {
      if (seq != next) ++bad;
      if (++next == n) s.send(me, report_atom{}, bad);
    }};
  });
  self->send(me, burst_atom{});
  ASSERT_TRUE(self->receive_for(10s, [&](burst_atom) {
    for (int k = 0; k < n; ++k) self->send(receiver, k);
  }));
  int bad = -1;
  EXPECT_TRUE(self->receive_for(30s, [&](report_atom, int b) { bad = b; }));
  EXPECT_EQ(bad, 0);
}

TEST(mailbox, a_receive_inside_a_handler_sees_the_answers_to_the_handlers_chained_messages) {
  // A scoped actor's handler sends two messages to an echo actor (the second
  // chained) and then waits, in a nested receive, for the echo of the
  // second: the receive must send the chain out first.
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  auto echo = sys.spawn([](event_actor& s) {
    return behavior{[&s](int x) {
      if (x == 2) s.send(s.sender(), x);  // answers the second only
    }};
  });
  self->send(me, burst_atom{});
  int answer = -1;
  ASSERT_TRUE(self->receive_for(10s, [&](burst_atom) {
    self->send(echo, 1);
    self->send(echo, 2);
    EXPECT_TRUE(self->receive_for(10s, [&](int x) { answer = x; }));
  }));
  EXPECT_EQ(answer, 2);
}
