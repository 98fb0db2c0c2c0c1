// Request/response: then, error handlers, timeouts, promises, blocking form.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "troupe/troupe.hpp"

using namespace std::chrono_literals;
using troupe::behavior;
using troupe::errc;
using troupe::error;
using troupe::event_actor;

namespace {
struct slow_atom {};
struct never_atom {};
struct boom_atom {};
}  // namespace

TEST(request, then_receives_the_value_inside_an_actor) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto server = sys.spawn([](event_actor&) { return behavior{[](int x) { return x + 1; }}; });
  std::promise<int> result;
  sys.spawn(
      [&result](event_actor& self, troupe::actor server) {
        self.request(server, 5s, 41)
            .then([&result](int v) { result.set_value(v); }, [&result](error&) { result.set_value(-1); });
      },
      server);
  EXPECT_EQ(result.get_future().get(), 42);
}

TEST(request, timeout_reaches_the_error_handler) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto silent = sys.spawn([](event_actor& self) {
    // answers never: keeps its promises until it ends
    return behavior{[&self, kept = std::vector<troupe::response_promise>{}](never_atom) mutable {
      kept.push_back(self.make_response_promise());
    }};
  });
  std::promise<errc> result;
  sys.spawn(
      [&result](event_actor& self, troupe::actor s) {
        self.request(s, 20ms, never_atom{})
            .then([&result]() { result.set_value(errc::none); }, [&result](error& e) { result.set_value(e.code()); });
      },
      silent);
  EXPECT_EQ(result.get_future().get(), errc::request_timeout);
}

TEST(request, exception_in_handler_travels_back_as_error_and_ends_the_server) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto server =
      sys.spawn([](event_actor&) { return behavior{[](boom_atom) -> int { throw std::runtime_error("kaputt"); }}; });
  troupe::scoped_actor self{sys};
  error got;
  self->request(server, 5s, boom_atom{}).receive([](int) { ADD_FAILURE(); }, [&](error& e) { got = e; });
  EXPECT_EQ(got.code(), errc::unhandled_exception);
  EXPECT_NE(got.message().find("kaputt"), std::string::npos);
  // the server is gone: the next request fails at once with actor_exited
  self->request(server, 5s, boom_atom{}).receive([](int) { ADD_FAILURE(); }, [&](error& e) { got = e; });
  EXPECT_EQ(got.code(), errc::actor_exited);
}

TEST(request, response_promise_answers_later) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto worker = sys.spawn([](event_actor&) { return behavior{[](int x) { return x * 10; }}; });
  auto front = sys.spawn(
      [](event_actor& self, troupe::actor worker) {
        return behavior{[&self, worker](int x) {
          auto rp = self.make_response_promise();
          self.request(worker, 5s, x).then([rp](int y) mutable { rp.deliver(y + 1); });
          return rp;
        }};
      },
      worker);
  troupe::scoped_actor self{sys};
  int got = 0;
  self->request(front, 5s, 4).receive([&](int v) { got = v; }, [](error& e) { ADD_FAILURE() << e.to_string(); });
  EXPECT_EQ(got, 41);
}

TEST(request, dropped_promise_answers_with_an_error) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto a =
      sys.spawn([](event_actor& self) { return behavior{[&self](int) { auto rp = self.make_response_promise(); }}; });
  troupe::scoped_actor self{sys};
  error got;
  self->request(a, 5s, 1).receive([]() { ADD_FAILURE(); }, [&](error& e) { got = e; });
  EXPECT_EQ(got.code(), errc::runtime_error);
}

TEST(request, void_handler_answers_with_an_empty_message) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  std::atomic<int> seen{0};
  auto a = sys.spawn([&seen](event_actor&) { return behavior{[&seen](int x) { seen = x; }}; });
  troupe::scoped_actor self{sys};
  bool done = false;
  self->request(a, 5s, 7).receive([&]() { done = true; }, [](error& e) { ADD_FAILURE() << e.to_string(); });
  EXPECT_TRUE(done);
  EXPECT_EQ(seen.load(), 7);
}

TEST(request, blocking_request_times_out) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto a = sys.spawn([](event_actor& self) {
    return behavior{[&self, kept = std::vector<troupe::response_promise>{}](slow_atom) mutable {
      kept.push_back(self.make_response_promise());
    }};
  });
  troupe::scoped_actor self{sys};
  error got;
  self->request(a, 10ms, slow_atom{}).receive([]() { ADD_FAILURE(); }, [&](error& e) { got = e; });
  EXPECT_EQ(got.code(), errc::request_timeout);
}

TEST(request, wrong_response_type_is_an_error_not_a_crash) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto a = sys.spawn([](event_actor&) { return behavior{[](int x) { return std::to_string(x); }}; });
  troupe::scoped_actor self{sys};
  error got;
  self->request(a, 5s, 1).receive([](int) { ADD_FAILURE(); }, [&](error& e) { got = e; });
  EXPECT_EQ(got.code(), errc::unexpected_response);
}

TEST(request, request_to_an_ended_actor_fails_fast) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto a = sys.spawn([](event_actor& self) { return behavior{[&self](int) { self.quit(); }}; });
  troupe::scoped_actor self{sys};
  self->monitor(a);
  sys.send(a, 1);
  self->receive([](troupe::down_msg&) {});
  error got;
  self->request(a, troupe::infinite, 2).receive([]() { ADD_FAILURE(); }, [&](error& e) { got = e; });
  EXPECT_EQ(got.code(), errc::actor_exited);
}

TEST(request, without_error_handler_a_failed_request_ends_the_requester) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto bad = sys.spawn([](event_actor&) { return behavior{[](int) -> int { throw std::runtime_error("x"); }}; });
  troupe::scoped_actor self{sys};
  auto client = sys.spawn([](event_actor& self, troupe::actor bad) { self.request(bad, 5s, 1).then([](int) {}); }, bad);
  self->monitor(client);
  error reason;
  self->receive([&](troupe::down_msg& m) { reason = m.reason; });
  EXPECT_EQ(reason.code(), errc::unhandled_exception);
}

namespace {
struct answer_all_atom {};
// Keeps every slow_atom request unanswered until answer_all_atom.
troupe::actor holder_of_promises(troupe::actor_system& sys) {
  return sys.spawn([](event_actor& self) {
    auto kept = std::make_shared<std::vector<troupe::response_promise>>();
    return behavior{[&self, kept](slow_atom) { kept->push_back(self.make_response_promise()); },
                    [kept](answer_all_atom) {
                      for (auto& p : *kept) (void)p.deliver(1);
                      kept->clear();
                    },
                    [](int x) { return x; }};
  });
}
}  // namespace

// A response that comes after its blocking request timed out is a dead
// letter as soon as the requester looks at its mailbox again (it used to stay
// queued, uncounted, until the scoped_actor ended).
TEST(request, late_responses_to_a_blocking_requester_are_counted_dead_letters) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto a = holder_of_promises(sys);
  troupe::scoped_actor self{sys};
  constexpr int n = 2000;
  int timeouts = 0;
  for (int i = 0; i < n; ++i)
    self->request(a, 1us, slow_atom{})
        .receive([] { ADD_FAILURE(); }, [&](error& e) { timeouts += e.code() == errc::request_timeout; });
  ASSERT_EQ(timeouts, n);
  const auto before = sys.dead_letters();
  self->send(a, answer_all_atom{});
  // The answers come before the answer to this request (one sender, in order).
  int got = 0;
  self->request(a, 10s, 7).receive([&](int v) { got = v; }, [](error& e) { ADD_FAILURE() << e.to_string(); });
  EXPECT_EQ(got, 7);
  EXPECT_EQ(sys.dead_letters() - before, static_cast<std::uint64_t>(n));
}

// A request handle dropped without receive: its response is a dead letter too.
TEST(request, a_dropped_blocking_request_handle_makes_its_response_a_dead_letter) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto a = sys.spawn([](event_actor&) { return behavior{[](int x) { return x; }}; });
  troupe::scoped_actor self{sys};
  const auto before = sys.dead_letters();
  {
    auto dropped = self->request(a, 10s, 1);
  }
  int got = 0;
  self->request(a, 10s, 2).receive([&](int v) { got = v; }, [](error& e) { ADD_FAILURE() << e.to_string(); });
  EXPECT_EQ(got, 2);
  EXPECT_EQ(sys.dead_letters() - before, 1u);
}

// The down message of an actor whose death failed a request stays for a
// later receive (it used to be dropped while the request waited).
TEST(request, a_down_message_that_arrives_during_a_blocking_request_is_kept) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto a = sys.spawn(
      [](event_actor& self) { return behavior{[&self](int) { self.quit(error{errc::runtime_error, "bye"}); }}; });
  troupe::scoped_actor self{sys};
  self->monitor(a);
  const auto live = sys.live_actors();
  sys.send(a, 0);
  // Until `a` has told its monitors: the down message is then queued first.
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (sys.live_actors() >= live && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  ASSERT_LT(sys.live_actors(), live);
  error failed;
  self->request(a, 10s, 1).receive([] { ADD_FAILURE(); }, [&](error& e) { failed = e; });
  EXPECT_EQ(failed.code(), errc::actor_exited);
  error reason;
  const bool got = self->receive_for(10s, [&](troupe::down_msg& m) { reason = m.reason; });
  ASSERT_TRUE(got) << "the down message was lost";
  EXPECT_EQ(reason.code(), errc::runtime_error);
}

// A blocking request's timeout wakes the requester at its deadline (libstdc++'s
// timed semaphore wait slept in growing steps and woke 10-25% late).
// A bound, not a measurement: the median of five 50 ms timeouts within 6 ms.
TEST(request, a_blocking_timeout_wakes_at_its_deadline) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto a = holder_of_promises(sys);
  troupe::scoped_actor self{sys};
  std::vector<double> late_ms;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    self->request(a, 50ms, slow_atom{}).receive([] { ADD_FAILURE(); }, [](error&) {});
    late_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() - 50);
  }
  std::sort(late_ms.begin(), late_ms.end());
  EXPECT_GE(late_ms.front(), 0.0) << "a timeout fired early";
  EXPECT_LT(late_ms[2], 6.0) << "median overshoot of a 50 ms blocking timeout";
}
