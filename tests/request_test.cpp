// Request/response: then, error handlers, timeouts, promises, blocking form.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
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
