// Actor idioms: await, skip, the behavior stack, per-actor state of function
// actors, stopping an actor from outside with a reason.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "troupe/troupe.hpp"

using namespace std::chrono_literals;
using troupe::behavior;
using troupe::errc;
using troupe::error;
using troupe::event_actor;

namespace {
struct go_atom {};
struct done_atom {};
struct report_atom {};
struct open_atom {};
struct close_atom {};
struct push_atom {};
struct pop_atom {};

// Answers every int request with the int.
troupe::actor echo(troupe::actor_system& sys) {
  return sys.spawn([](event_actor&) { return behavior{[](int x) { return x; }}; });
}

// Holds requests until released: a server whose answers come when the test
// says; report_atom tells how many requests it holds.
struct release_atom {};
troupe::actor gate(troupe::actor_system& sys) {
  return sys.spawn([](event_actor& self) {
    auto held = std::make_shared<std::vector<std::pair<troupe::response_promise, int>>>();
    return behavior{[&self, held](int x) { held->emplace_back(self.make_response_promise(), x); },
                    [held](release_atom) {
                      for (auto& [p, x] : *held) (void)p.deliver(x * 10);
                      held->clear();
                    },
                    [held](report_atom) { return held->size(); }};
  });
}

// Waits (bounded) until `server` holds `n` requests.
void wait_until_held(troupe::scoped_actor& self, const troupe::actor& server, std::size_t n) {
  for (auto until = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < until;) {
    std::size_t held = 0;
    self->request(server, 10s, report_atom{}).receive([&](std::size_t v) { held = v; }, [](error&) {});
    if (held >= n) return;
    std::this_thread::sleep_for(1ms);
  }
  FAIL() << "the server never got the request";
}
}  // namespace

// While an awaited response is out, other messages wait, in order, and run
// after it; a then() response would not have held them.
TEST(idioms, await_holds_other_messages_until_the_response_is_in) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto server = gate(sys);
  troupe::scoped_actor self{sys};
  auto log = std::make_shared<std::vector<std::string>>();
  auto a = sys.spawn([log, server](event_actor& me) {
    return behavior{[&me, log, server](go_atom) {
                      me.request(server, 10s, 4).await([log](int v) { log->push_back("answer " + std::to_string(v)); });
                    },
                    [log](std::string s) { log->push_back(s); }, [log](report_atom) { return *log; }};
  });
  sys.send(a, go_atom{});
  sys.send(a, std::string{"first"});
  sys.send(a, std::string{"second"});
  wait_until_held(self, server, 1);
  self->send(server, release_atom{});
  std::vector<std::string> seen;
  self->request(a, 10s, report_atom{})
      .receive([&](std::vector<std::string>& v) { seen = v; }, [](error& e) { FAIL() << e.to_string(); });
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0], "answer 40");
  EXPECT_EQ(seen[1], "first");
  EXPECT_EQ(seen[2], "second");
}

// 50,000 awaited requests outstanding at once and 50,000 ordinary messages
// held behind them: every response runs, then every held message, in order
// (CAF 0.17's await scans the mailbox per response: quadratic).
TEST(idioms, await_with_fifty_thousand_outstanding_requests) {
  constexpr int n = 50'000;
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto server = echo(sys);
  struct tally {
    long answers = 0;
    long sum = 0;
    std::vector<int> held_order;
    bool answers_before_held = true;
  };
  auto a = sys.spawn([server](troupe::stateful_actor<tally>& self) {
    return behavior{[&self, server](go_atom) {
                      for (int i = 0; i < n; ++i)
                        self.request(server, troupe::infinite, i).await([&self](int v) {
                          ++self.state().answers;
                          self.state().sum += v;
                        });
                    },
                    [&self](int x) {
                      if (self.state().answers != n) self.state().answers_before_held = false;
                      self.state().held_order.push_back(x);
                    },
                    [&self](report_atom) {
                      auto& s = self.state();
                      return std::make_tuple(s.answers, s.sum, s.answers_before_held, s.held_order);
                    }};
  });
  sys.send(a, go_atom{});
  for (int i = 0; i < n; ++i) sys.send(a, i);
  troupe::scoped_actor self{sys};
  self->request(a, 120s, report_atom{})
      .receive(
          [&](long answers, long sum, bool before, std::vector<int>& order) {
            EXPECT_EQ(answers, n);
            EXPECT_EQ(sum, static_cast<long>(n) * (n - 1) / 2);
            EXPECT_TRUE(before);
            ASSERT_EQ(order.size(), static_cast<std::size_t>(n));
            for (int i = 0; i < n; ++i) ASSERT_EQ(order[i], i);
          },
          [](error& e) { FAIL() << e.to_string(); });
}

// An awaited request that times out releases the held messages too.
TEST(idioms, an_awaited_timeout_ends_the_wait) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto server = gate(sys);  // never released
  auto log = std::make_shared<std::vector<std::string>>();
  auto a = sys.spawn([log, server](event_actor& me) {
    return behavior{[&me, log, server](go_atom) {
                      me.request(server, 20ms, 1)
                          .await([](int) {},
                                 [log](error& e) { log->push_back(std::string{troupe::to_string(e.code())}); });
                    },
                    [log](std::string s) { log->push_back(s); }, [log](report_atom) { return *log; }};
  });
  sys.send(a, go_atom{});
  sys.send(a, std::string{"after"});
  troupe::scoped_actor self{sys};
  std::vector<std::string> seen;
  self->request(a, 10s, report_atom{}).receive([&](std::vector<std::string>& v) { seen = v; }, [](error&) {});
  EXPECT_EQ(seen, (std::vector<std::string>{"request_timeout", "after"}));
}

// A bank teller: while a transaction is open, deposits are skipped; they run,
// in the order they came, once the teller is back to its idle behavior.
namespace {
struct book {
  std::vector<std::string> log;
};
behavior teller_idle(troupe::stateful_actor<book>& self);
behavior teller_busy(troupe::stateful_actor<book>& self) {
  return behavior{[](int) { return troupe::skip; },
                  [&self](close_atom) {
                    self.state().log.push_back("close");
                    self.become(teller_idle(self));
                  },
                  [&self](report_atom) { return self.state().log; }};
}
behavior teller_idle(troupe::stateful_actor<book>& self) {
  return behavior{[&self](open_atom) {
                    self.state().log.push_back("open");
                    self.become(teller_busy(self));
                  },
                  [&self](int amount) { self.state().log.push_back("deposit " + std::to_string(amount)); },
                  [&self](report_atom) { return self.state().log; }};
}
}  // namespace

TEST(idioms, skipped_messages_run_in_order_after_the_behavior_changes) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto teller = sys.spawn([](troupe::stateful_actor<book>& self) { return teller_idle(self); });
  troupe::scoped_actor self{sys};
  self->send(teller, open_atom{});
  self->send(teller, 1);
  self->send(teller, 2);
  std::vector<std::string> seen;
  self->request(teller, 10s, report_atom{}).receive([&](std::vector<std::string>& v) { seen = v; }, [](error&) {});
  EXPECT_EQ(seen, (std::vector<std::string>{"open"}));
  self->send(teller, close_atom{});
  self->send(teller, 3);
  self->request(teller, 10s, report_atom{}).receive([&](std::vector<std::string>& v) { seen = v; }, [](error&) {});
  EXPECT_EQ(seen, (std::vector<std::string>{"open", "close", "deposit 1", "deposit 2", "deposit 3"}));
}

// A skipped request is answered when it is finally handled.
TEST(idioms, a_skipped_request_is_answered_later) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto a = sys.spawn([](event_actor& self) {
    self.set_default_handler(troupe::skip);
    return behavior{[&self](open_atom) { self.become(behavior{[](int x) { return x + 1; }}); }};
  });
  troupe::scoped_actor self{sys};
  auto pending = self->request(a, 10s, 41);
  self->send(a, open_atom{});
  int got = 0;
  std::move(pending).receive([&](int v) { got = v; }, [](error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(got, 42);
  EXPECT_EQ(sys.unexpected_messages(), 0u);
}

// become(keep_behavior, b) pushes, unbecome() pops; popping the last one
// leaves no behavior and the actor ends.
namespace {
// Each push puts a behavior one level up on the stack; each pop goes back.
class stack_actor : public event_actor {
 protected:
  behavior make_behavior() override { return level(0); }

 private:
  behavior level(int n) {
    return behavior{[this, n](push_atom) { become(troupe::keep_behavior, level(n + 1)); },
                    [this](pop_atom) { unbecome(); }, [n](report_atom) { return n; }};
  }
};
}  // namespace

TEST(idioms, the_behavior_stack_returns_to_the_previous_behavior) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto a = sys.spawn<stack_actor>();
  troupe::scoped_actor self{sys};
  auto level = [&] {
    int v = -1;
    self->request(a, 10s, report_atom{}).receive([&](int x) { v = x; }, [](error&) {});
    return v;
  };
  EXPECT_EQ(level(), 0);
  self->send(a, push_atom{});
  self->send(a, push_atom{});
  EXPECT_EQ(level(), 2);
  self->send(a, pop_atom{});
  EXPECT_EQ(level(), 1);
  self->send(a, pop_atom{});
  EXPECT_EQ(level(), 0);
  self->monitor(a);
  self->send(a, pop_atom{});
  error reason{errc::runtime_error};
  ASSERT_TRUE(self->receive_for(10s, [&](troupe::down_msg& m) { reason = m.reason; }));
  EXPECT_EQ(reason.code(), errc::none);
}

// A handler may go on using what it captured after become() replaced its
// behavior (the running behavior is freed when the handler returns;
// AddressSanitizer checks this).
TEST(idioms, a_handler_outlives_the_become_that_replaces_it) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto a = sys.spawn([](event_actor& self) {
    return behavior{[&self, name = std::string(100, 'x')](go_atom) {
      self.become(behavior{[](report_atom) { return std::string{"replaced"}; }});
      return name + "!";  // the old behavior's capture, after become
    }};
  });
  troupe::scoped_actor self{sys};
  std::string got;
  self->request(a, 10s, go_atom{}).receive([&](std::string& s) { got = s; }, [](error&) {});
  EXPECT_EQ(got, std::string(100, 'x') + "!");
  self->request(a, 10s, report_atom{}).receive([&](std::string& s) { got = s; }, [](error&) {});
  EXPECT_EQ(got, "replaced");
}

// The state of a function actor lives as long as the actor, not as long as
// its handles: what it holds is let go when the actor ends.
TEST(idioms, stateful_actor_state_ends_with_the_actor) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  static std::atomic<int> alive{0};
  struct counter {
    long total = 0;
    counter() { ++alive; }
    ~counter() { --alive; }
  };
  auto a = sys.spawn([](troupe::stateful_actor<counter>& self) {
    return behavior{[&self](long n) { return self.state().total += n; }, [&self](done_atom) { self.quit(); }};
  });
  troupe::scoped_actor self{sys};
  long total = 0;
  self->request(a, 10s, 5L).receive([&](long v) { total = v; }, [](error&) {});
  self->request(a, 10s, 6L).receive([&](long v) { total = v; }, [](error&) {});
  EXPECT_EQ(total, 11);
  EXPECT_EQ(alive.load(), 1);
  self->monitor(a);
  self->send(a, done_atom{});
  self->receive([](troupe::down_msg&) {});
  EXPECT_EQ(alive.load(), 0);  // while `a` (a handle) is still held here
  EXPECT_TRUE(a);
}

// Stopping an actor from outside: the reason reaches its monitors; an exit
// handler may trap it; errc::kill cannot be trapped.
TEST(idioms, send_exit_stops_an_actor_with_a_reason) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  auto plain = sys.spawn([](event_actor&) { return behavior{[](int) {}}; });
  self->monitor(plain);
  sys.send_exit(plain, error{errc::user_shutdown, "reconfigured"});
  error reason;
  ASSERT_TRUE(self->receive_for(10s, [&](troupe::down_msg& m) { reason = m.reason; }));
  EXPECT_EQ(reason.code(), errc::user_shutdown);
  EXPECT_EQ(reason.message(), "reconfigured");

  auto trapping = sys.spawn([](event_actor& self) {
    auto trapped = std::make_shared<int>(0);
    self.set_exit_handler([trapped](troupe::exit_msg&) { ++*trapped; });
    return behavior{[trapped](report_atom) { return *trapped; }};
  });
  self->monitor(trapping);
  self->send_exit(trapping, error{errc::user_shutdown, "please"});
  int trapped = 0;
  self->request(trapping, 10s, report_atom{}).receive([&](int v) { trapped = v; }, [](error&) {});
  EXPECT_EQ(trapped, 1);  // still alive, and it saw the request
  sys.send_exit(trapping, error{errc::kill, "now"});
  ASSERT_TRUE(self->receive_for(10s, [&](troupe::down_msg& m) { reason = m.reason; }));
  EXPECT_EQ(reason.code(), errc::kill);

  using counter_if = troupe::typed_actor<int(int)>;
  counter_if typed = sys.spawn([](event_actor&) -> counter_if::behavior_type { return {[](int x) { return x; }}; });
  self->monitor(typed.address());
  sys.send_exit(typed, error{errc::user_shutdown});
  ASSERT_TRUE(self->receive_for(10s, [&](troupe::down_msg& m) { reason = m.reason; }));
  EXPECT_EQ(reason.code(), errc::user_shutdown);
}

// Skip in a blocking receive: the message stays, in its place, for a later
// receive.
TEST(idioms, skip_in_a_blocking_receive_keeps_the_message) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  self->send(self->self(), 1);
  self->send(self->self(), std::string{"text"});
  self->send(self->self(), 2);
  std::string text;
  self->receive([](int) { return troupe::skip; }, [&](std::string& s) { text = s; });
  EXPECT_EQ(text, "text");
  std::vector<int> got;
  self->receive([&](int x) { got.push_back(x); });
  self->receive([&](int x) { got.push_back(x); });
  EXPECT_EQ(got, (std::vector<int>{1, 2}));
}
