// One failure semantics for every kind of stage, wherever it runs: a stage
// that throws on an element cancels its graph (failure::cancel: wait()
// rethrows, error() and completed name the node) or has that element dropped,
// counted and reported while the rest goes on (failure::skip).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "placements.hpp"
#include "troupe/troupe.hpp"

namespace st = troupe::stream;
using namespace std::chrono_literals;
using troupe_test::counting_source;

namespace {

constexpr std::int64_t n = 1'000;
bool bad(std::int64_t x) { return x % 100 == 7; }  // 10 of them
std::int64_t checked(std::int64_t x) {
  if (bad(x)) throw std::domain_error{"bad element " + std::to_string(x)};
  return x;
}

// What the sinks saw.
struct collected {
  std::mutex mtx;
  std::vector<std::int64_t> values;
  void add(std::int64_t x) {
    std::lock_guard<std::mutex> g{mtx};
    values.push_back(x);
  }
  std::vector<std::int64_t> sorted() {
    std::lock_guard<std::mutex> g{mtx};
    auto v = values;
    std::sort(v.begin(), v.end());
    return v;
  }
};

std::vector<std::int64_t> good_values(int copies_of_good = 1, int copies_of_bad = 0) {
  std::vector<std::int64_t> v;
  for (std::int64_t x = 0; x < n; ++x)
    for (int k = 0; k < (bad(x) ? copies_of_bad : copies_of_good); ++k) v.push_back(x);
  return v;
}

struct throwing_node : st::node<std::int64_t, std::int64_t> {
  static constexpr const char* kind = "throwing_node";
  void consume(std::int64_t& x) { send_next(checked(x)); }
};

// The stage kinds, each a pattern from 0 .. n-1 into `c`, whose failing stage
// throws on bad(x): its node's name, and what the sinks see under skip.
struct stage_kind {
  std::string name;
  std::string node;  // the failing node's name in the error
  std::vector<std::int64_t> expected;
  std::function<st::graph(troupe::actor_system&, collected&, const st::options&)> spawn;
};

template <class Mid>
auto through(Mid mid) {
  return [mid](troupe::actor_system& sys, collected& c, const st::options& o) {
    return troupe::spawn_pattern(
        sys, troupe::pipeline{counting_source(n), mid, st::sink([&c](std::int64_t x) { c.add(x); })}, o);
  };
}

std::vector<stage_kind> stage_kinds() {
  std::vector<stage_kind> k;
  k.push_back({"source", "source", good_values(), [](troupe::actor_system& sys, collected& c, const st::options& o) {
                 auto src = st::source([i = std::int64_t{0}]() mutable -> std::optional<std::int64_t> {
                   if (i == n) return std::nullopt;
                   return checked(i++);
                 });
                 return troupe::spawn_pattern(sys, troupe::pipeline{src, st::sink([&c](std::int64_t x) { c.add(x); })},
                                              o);
               }});
  k.push_back({"map", "map", good_values(), through(st::map([](std::int64_t x) { return checked(x); }))});
  k.push_back({"node", "throwing_node", good_values(), through(throwing_node{})});
  k.push_back({"sink", "sink", good_values(), [](troupe::actor_system& sys, collected& c, const st::options& o) {
                 return troupe::spawn_pattern(
                     sys, troupe::pipeline{counting_source(n), st::sink([&c](std::int64_t x) { c.add(checked(x)); })},
                     o);
               }});
  k.push_back({"seq", "seq", good_values(), through(troupe::seq{[](std::int64_t x) { return checked(x); }})});
  k.push_back(
      {"farm", "map", good_values(), through(troupe::farm{st::map([](std::int64_t x) { return checked(x); }), 3})});
  k.push_back({"ordered_farm", "map", good_values(),
               through(troupe::farm{st::map([](std::int64_t x) { return checked(x); }), 3, troupe::round_robin{},
                                    troupe::ordered})});
  k.push_back({"branches", "map", good_values(2, 1),
               through(troupe::branches{st::map([](std::int64_t x) { return checked(x); }),
                                        troupe::seq{[](std::int64_t x) { return x; }}})});
  k.push_back(
      {"placed", "map", good_values(),
       through(troupe::placed{st::map([](std::int64_t x) { return checked(x); }), troupe::placement::own_thread()})});
  k.push_back({"count_window", "count_window", good_values(),
               through(troupe::pipeline{
                   st::count_window<std::int64_t>(
                       [](const std::int64_t& x) { return x; }, 1, 1,
                       [](const std::int64_t&, std::span<const std::int64_t> w) { return checked(w[0]); }),
                   troupe::seq{[](st::window_result<std::int64_t, std::int64_t> r) { return r.value; }}})});
  k.push_back(
      {"map_stage", "map_stage", good_values(), [](troupe::actor_system& sys, collected& c, const st::options& o) {
         return troupe::spawn_pattern(
             sys,
             troupe::pipeline{counting_source(n),
                              troupe::seq{[](std::int64_t x) { return std::vector<std::int64_t>{x}; }},
                              troupe::map_stage{[](const std::int64_t& x) { return checked(x); }},
                              st::sink([&c](std::vector<std::int64_t> v) { c.add(v.at(0)); })},
             o);
       }});
  k.push_back({"dac_stage", "dac_stage", good_values(),
               through(troupe::dac_stage{
                   troupe::dac{.is_base = [](const std::int64_t&) { return true; },
                               .solve = [](std::int64_t x) { return checked(x); },
                               .divide = [](std::int64_t x) { return std::vector<std::int64_t>{x}; },
                               .combine = [](std::int64_t, std::vector<std::int64_t> r) { return r[0]; }}})});
  return k;
}

struct failure_case {
  troupe_test::placement_case where;
  st::failure mode;
};

class failing_stage : public ::testing::TestWithParam<failure_case> {};

}  // namespace

TEST_P(failing_stage, every_stage_kind_fails_the_same_way) {
  const auto& param = GetParam();
  troupe::actor_system sys{troupe::config{.workers = param.where.workers}};
  troupe::scoped_actor self{sys};
  for (auto& kind : stage_kinds()) {
    SCOPED_TRACE(kind.name);
    collected c;
    st::options o;
    o.placement = param.where.where;
    o.capacity = 64;
    o.on_error = param.mode;
    o.notify = self.handle();
    o.errors_to = self.handle();
    auto g = kind.spawn(sys, c, o);
    if (param.mode == st::failure::cancel) {
      try {
        g.wait();
        ADD_FAILURE() << "wait() returned normally";
      } catch (const std::domain_error& e) {
        EXPECT_EQ(std::string{e.what()}.rfind("bad element ", 0), 0u) << e.what();
      }
      const auto err = g.error();
      EXPECT_EQ(err.code(), troupe::errc::unhandled_exception);
      EXPECT_NE(err.message().find("stream node '" + kind.node + "'"), std::string::npos) << err.message();
      EXPECT_NE(err.message().find("bad element "), std::string::npos) << err.message();
      troupe::error reported;
      self->receive([&](st::completed& done) { reported = done.error; });
      EXPECT_EQ(reported, err);
      EXPECT_EQ(reported.message(), err.message());
    } else {
      g.wait();
      EXPECT_FALSE(g.error());
      EXPECT_EQ(c.sorted(), kind.expected);
      EXPECT_EQ(g.failed(), 10u);
      std::uint64_t failed_in_metrics = 0;
      for (auto& node : g.metrics().nodes) failed_in_metrics += node.failed;
      EXPECT_EQ(failed_in_metrics, 10u);
      // Ten element_failed reports (in any order) and then completed.
      std::vector<std::string> reports;
      bool done = false;
      while (!done)
        self->receive([&](st::element_failed& f) { reports.push_back(f.node + ": " + f.error.message()); },
                      [&](st::completed& end) {
                        done = true;
                        EXPECT_FALSE(end.error);
                        EXPECT_EQ(end.failed, 10u);
                      });
      ASSERT_EQ(reports.size(), 10u);
      for (auto& r : reports) EXPECT_EQ(r.rfind(kind.node + ": ", 0), 0u) << r;
    }
  }
}

TEST(failing_stage, an_ordered_farm_under_skip_keeps_the_order_of_what_is_left) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  std::vector<std::int64_t> got;
  auto g = troupe::spawn_pattern(sys,
                                 troupe::pipeline{counting_source(n),
                                                  troupe::farm{st::map([](std::int64_t x) { return checked(x); }), 4,
                                                               troupe::round_robin{}, troupe::ordered},
                                                  st::sink([&](std::int64_t x) { got.push_back(x); })},
                                 {.capacity = 16, .on_error = st::failure::skip});
  g.wait();
  EXPECT_EQ(got, good_values());
}

TEST(failing_stage, an_actor_asked_by_a_stage_answering_an_error_fails_the_element) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto checker = sys.spawn([](troupe::event_actor& self) {
    return troupe::behavior{[&self](std::int64_t x) {
      auto rp = self.make_response_promise();
      if (bad(x)) rp.deliver(troupe::error{troupe::errc::runtime_error, "refused " + std::to_string(x)});
      else rp.deliver(x);
      return rp;
    }};
  });
  collected c;
  auto g =
      troupe::spawn_pattern(sys,
                            troupe::pipeline{counting_source(n), troupe::seq_actor<std::int64_t, std::int64_t>{checker},
                                             st::sink([&c](std::int64_t x) { c.add(x); })},
                            {.on_error = st::failure::skip});
  g.wait();
  EXPECT_EQ(c.sorted(), good_values());
  EXPECT_EQ(g.failed(), 10u);
  auto h = troupe::spawn_pattern(
      sys, troupe::pipeline{counting_source(n), troupe::seq_actor<std::int64_t, std::int64_t>{checker},
                            st::sink([](std::int64_t) {})});
  EXPECT_THROW(h.wait(), troupe::stage_error);
  EXPECT_NE(h.error().message().find("refused 7"), std::string::npos) << h.error().to_string();
}

TEST(failing_stage, a_posted_task_that_throws_is_counted) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  std::atomic<int> ran{0};
  troupe::post(sys, [&] {
    ++ran;
    throw std::runtime_error{"posted and failed"};
  });
  troupe::post(sys, [&] { ++ran; });
  while (ran.load() < 2 || sys.failed_tasks() < 1) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(sys.failed_tasks(), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    modes, failing_stage,
    ::testing::Values(failure_case{{"pool_1_worker", 1, troupe::placement::pool()}, st::failure::cancel},
                      failure_case{{"pool_2_workers", 2, troupe::placement::pool()}, st::failure::cancel},
                      failure_case{{"threads", 1, troupe::placement::own_thread()}, st::failure::cancel},
                      failure_case{{"pool_1_worker", 1, troupe::placement::pool()}, st::failure::skip},
                      failure_case{{"pool_2_workers", 2, troupe::placement::pool()}, st::failure::skip},
                      failure_case{{"threads", 1, troupe::placement::own_thread()}, st::failure::skip}),
    [](const auto& info) {
      return std::string{info.param.where.name} + (info.param.mode == st::failure::cancel ? "_cancel" : "_skip");
    });
