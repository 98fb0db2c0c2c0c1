// Patterns used from actors: a graph with an entry whose last stage emits
// answers each request with its item's first result (or its error), sends the
// results of plain sends to their sender (or options.results_to), and ends
// its entry actor when it fails or its input ends.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "placements.hpp"
#include "troupe/troupe.hpp"

namespace st = troupe::stream;
using namespace std::chrono_literals;
using answering_graph = troupe_test::placed_test;

namespace {

template <class Out>
struct answer {
  std::optional<Out> value;
  troupe::error error;
};

template <class Out, class In>
answer<Out> ask(troupe::scoped_actor& self, const troupe::actor& p, In in) {
  answer<Out> r;
  self->request(p, 30s, std::move(in))
      .receive([&](Out& v) { r.value = std::move(v); }, [&](troupe::error& e) { r.error = e; });
  return r;
}

auto squares_then_text() {
  return troupe::pipeline{troupe::farm{troupe::seq{[](std::int64_t x) { return x * x; }}, 3},
                          troupe::seq{[](std::int64_t x) { return std::to_string(x); }}};
}

}  // namespace

TEST_P(answering_graph, many_actors_request_at_once_and_each_gets_its_own_answer) {
  troupe::actor_system sys{cfg()};
  auto p = troupe::spawn_pattern(sys, squares_then_text(), opts());
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  static constexpr int actors = 20, each = 50;
  for (int a = 0; a < actors; ++a)
    sys.spawn([p, me, a](troupe::event_actor& s) {
      auto left = std::make_shared<int>(each);
      auto ok = std::make_shared<bool>(true);
      for (std::int64_t i = 0; i < each; ++i) {
        const std::int64_t x = a * 1000 + i;
        s.request(p, 30s, x).then(
            [&s, me, x, left, ok, a](std::string& v) {
              *ok = *ok && v == std::to_string(x * x);
              if (--*left == 0) s.send(me, a, *ok);
            },
            [&s, me, left, a](troupe::error&) {
              if (--*left == 0) s.send(me, a, false);
            });
      }
      return troupe::behavior{};
    });
  for (int i = 0; i < actors; ++i) self->receive([](int a, bool ok) { EXPECT_TRUE(ok) << "actor " << a; });
}

TEST_P(answering_graph, a_request_gets_the_first_result_and_a_plain_send_every_result) {
  troupe::actor_system sys{cfg()};
  auto p = troupe::spawn_pattern(
      sys, troupe::pipeline{st::flat_map<std::int64_t>([](std::int64_t& x, st::emitter<std::int64_t>& out) {
        for (std::int64_t k = 0; k < x; ++k) out.send_next(x * 100 + k);
      })},
      opts());
  troupe::scoped_actor self{sys};
  auto r = ask<std::int64_t>(self, p, std::int64_t{3});
  ASSERT_TRUE(r.value) << r.error.to_string();
  EXPECT_EQ(*r.value, 300);
  self->send(p, std::int64_t{4});
  std::vector<std::int64_t> all;
  for (int i = 0; i < 4; ++i) self->receive([&](std::int64_t v) { all.push_back(v); });
  EXPECT_EQ(all, (std::vector<std::int64_t>{400, 401, 402, 403}));
}

TEST_P(answering_graph, an_item_without_a_result_is_answered_with_an_error) {
  troupe::actor_system sys{cfg()};
  auto p =
      troupe::spawn_pattern(sys, troupe::farm{st::filter([](const std::int64_t& x) { return x % 2 == 0; }), 2}, opts());
  troupe::scoped_actor self{sys};
  auto kept = ask<std::int64_t>(self, p, std::int64_t{4});
  ASSERT_TRUE(kept.value);
  EXPECT_EQ(*kept.value, 4);
  auto dropped = ask<std::int64_t>(self, p, std::int64_t{5});
  EXPECT_FALSE(dropped.value);
  EXPECT_TRUE(dropped.error);
}

TEST_P(answering_graph, results_to_takes_the_results_of_plain_sends_and_anonymous_ones_are_counted) {
  troupe::actor_system sys{cfg()};
  troupe::scoped_actor self{sys};
  auto o = opts();
  o.results_to = self.handle();
  auto p = troupe::spawn_pattern(sys, troupe::seq{[](std::int64_t x) { return x + 1; }}, o);
  sys.send(p, std::int64_t{1});  // anonymous: to results_to
  std::int64_t got = 0;
  self->receive([&](std::int64_t v) { got = v; });
  EXPECT_EQ(got, 2);
  // Without results_to, the result of an anonymous send has nowhere to go.
  auto q = troupe::spawn_pattern(sys, troupe::seq{[](std::int64_t x) { return x + 1; }}, opts());
  const auto before = sys.dead_letters();
  sys.send(q, std::int64_t{1});
  q.close();
  q.wait();
  EXPECT_EQ(sys.dead_letters() - before, 1u);
}

TEST_P(answering_graph, a_failure_ends_the_entry_with_the_error_and_answers_the_requester) {
  troupe::actor_system sys{cfg()};
  auto p = troupe::spawn_pattern(
      sys, troupe::pipeline{troupe::seq{[](std::int64_t x) { return x; }}, troupe::seq{[](std::int64_t x) {
                              if (x == 13) throw std::runtime_error{"unlucky"};
                              return x;
                            }}},
      opts());
  troupe::scoped_actor self{sys};
  troupe::error reason;
  bool down = false;
  self->set_down_handler([&](troupe::down_msg& d) {
    down = true;
    reason = d.reason;
  });
  self->monitor(p.entry());
  auto fine = ask<std::int64_t>(self, p, std::int64_t{12});
  ASSERT_TRUE(fine.value);
  auto bad = ask<std::int64_t>(self, p, std::int64_t{13});
  EXPECT_EQ(bad.error.code(), troupe::errc::unhandled_exception);
  EXPECT_NE(bad.error.message().find("unlucky"), std::string::npos) << bad.error.to_string();
  EXPECT_THROW(p.wait(), std::runtime_error);
  EXPECT_EQ(p.error(), bad.error);
  // The next request finds the entry ending or gone: an error either way.
  auto late = ask<std::int64_t>(self, p, std::int64_t{14});
  EXPECT_TRUE(late.error) << "a request after the failure was answered";
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!down && std::chrono::steady_clock::now() < deadline) self->receive_for(1ms, [](int) {});
  ASSERT_TRUE(down);
  EXPECT_EQ(reason, bad.error);
}

TEST_P(answering_graph, under_skip_a_failed_item_is_answered_with_its_error_and_the_rest_go_on) {
  troupe::actor_system sys{cfg()};
  auto o = opts();
  o.on_error = st::failure::skip;
  auto p = troupe::spawn_pattern(sys,
                                 troupe::farm{troupe::seq{[](std::int64_t x) {
                                                if (x % 10 == 3) throw std::invalid_argument{"ends in 3"};
                                                return -x;
                                              }},
                                              2, troupe::round_robin{}, troupe::ordered},
                                 o);
  troupe::scoped_actor self{sys};
  int errors = 0;
  for (std::int64_t i = 0; i < 100; ++i) {
    auto r = ask<std::int64_t>(self, p, i);
    if (i % 10 == 3) {
      EXPECT_EQ(r.error.code(), troupe::errc::unhandled_exception);
      ++errors;
    } else {
      ASSERT_TRUE(r.value) << i << ": " << r.error.to_string();
      EXPECT_EQ(*r.value, -i);
    }
  }
  EXPECT_EQ(errors, 10);
  EXPECT_EQ(p.failed(), 10u);
  p.close();
  p.wait();  // skip: the graph itself ends normally
  EXPECT_FALSE(p.error());
}

TEST_P(answering_graph, after_the_input_ends_requests_get_an_error) {
  troupe::actor_system sys{cfg()};
  auto p = troupe::spawn_pattern(sys, troupe::seq{[](std::int64_t x) { return x; }}, opts());
  troupe::scoped_actor self{sys};
  self->send(p, st::end_of_stream{});
  p.wait();
  auto r = ask<std::int64_t>(self, p, std::int64_t{1});
  EXPECT_FALSE(r.value);
  EXPECT_TRUE(r.error);
}

INSTANTIATE_TEST_SUITE_P(placements, answering_graph, troupe_test::every_placement(), troupe_test::placement_name);
