// Ordered farms in stream graphs: outputs leave in input order whatever the
// replicas' speed, with any number of outputs per input, every policy that
// may order, pipelines as replicas, and in every placement.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "placements.hpp"
#include "troupe/troupe.hpp"

namespace st = troupe::stream;
using namespace std::chrono_literals;
using ordered_farm = troupe_test::placed_test;
using troupe_test::counting_source;

namespace {

// Replicas that take uneven time: later inputs often finish first.
void jitter(std::int64_t x) {
  if (x % 97 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50 + x % 200));
}

// x -> nothing (x % 3 == 0), x (otherwise), and -x too when x % 5 == 0.
struct uneven : st::node<std::int64_t, std::int64_t> {
  void consume(std::int64_t& x) {
    jitter(x);
    if (x % 3 == 0) return;
    send_next(x);
    if (x % 5 == 0) send_next(-x);
  }
};

std::vector<std::int64_t> uneven_expected(std::int64_t n) {
  std::vector<std::int64_t> want;
  for (std::int64_t x = 0; x < n; ++x) {
    if (x % 3 == 0) continue;
    want.push_back(x);
    if (x % 5 == 0) want.push_back(-x);
  }
  return want;
}

template <class Policy>
std::vector<std::int64_t> run_uneven(troupe::actor_system& sys, const st::options& o, std::int64_t n, Policy policy) {
  std::vector<std::int64_t> got;
  auto g =
      troupe::spawn_pattern(sys,
                            troupe::pipeline{counting_source(n), troupe::farm{uneven{}, 4, policy, troupe::ordered},
                                             st::sink([&](std::int64_t x) { got.push_back(x); })},
                            o);
  g.wait();
  return got;
}

}  // namespace

TEST_P(ordered_farm, zero_one_or_many_outputs_per_input_stay_in_input_order) {
  troupe::actor_system sys{cfg()};
  constexpr std::int64_t n = 30'000;
  const auto want = uneven_expected(n);
  EXPECT_EQ(run_uneven(sys, opts(), n, troupe::round_robin{}), want);
  EXPECT_EQ(run_uneven(sys, opts(), n, troupe::random_choice{}), want);
  EXPECT_EQ(run_uneven(sys, opts(), n, troupe::least_loaded{}), want);
  EXPECT_EQ(run_uneven(sys, opts(), n, troupe::by_key{[](const std::int64_t& x) { return x % 7; }}), want);
}

TEST_P(ordered_farm, replicas_that_are_pipelines_and_farms_around_them) {
  troupe::actor_system sys{cfg()};
  constexpr std::int64_t n = 20'000;
  std::vector<std::int64_t> got;
  // An ordered farm of three-stage pipelines between single-replica stages.
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{counting_source(n), st::map([](std::int64_t x) { return x * 2; }),
                       troupe::farm{troupe::pipeline{uneven{}, st::map([](std::int64_t x) { return x + 1; }),
                                                     st::filter([](const std::int64_t& x) { return x % 4 != 3; })},
                                    3, troupe::round_robin{}, troupe::ordered},
                       st::sink([&](std::int64_t x) { got.push_back(x); })},
      opts());
  g.wait();
  std::vector<std::int64_t> want;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t x = 2 * i;
    if (x % 3 == 0) continue;
    for (std::int64_t y : {x, -x}) {
      if (y == -x && x % 5 != 0) continue;
      if ((y + 1) % 4 != 3) want.push_back(y + 1);
    }
  }
  EXPECT_EQ(got, want);
}

TEST_P(ordered_farm, an_ordered_farm_inside_each_replica_of_an_unordered_one) {
  troupe::actor_system sys{cfg()};
  constexpr std::int64_t n = 10'000;
  std::mutex mtx;
  std::vector<std::int64_t> got;
  // Each outer replica keeps its own share in order; with by_key on parity,
  // odd and even inputs each come out in order.
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{counting_source(n),
                       troupe::farm{troupe::farm{st::map([](std::int64_t x) {
                                                   jitter(x);
                                                   return x;
                                                 }),
                                                 2, troupe::round_robin{}, troupe::ordered},
                                    2, troupe::by_key{[](const std::int64_t& x) { return x % 2; }}},
                       st::sink([&](std::int64_t x) {
                         std::lock_guard<std::mutex> guard{mtx};
                         got.push_back(x);
                       })},
      opts());
  g.wait();
  ASSERT_EQ(got.size(), static_cast<std::size_t>(n));
  std::int64_t last[2] = {-2, -1};
  for (auto x : got) {
    ASSERT_GT(x, last[x % 2]) << "parity " << x % 2;
    last[x % 2] = x;
  }
}

namespace {
// Emits its replica's count of inputs at the end of the stream.
struct counts_at_stop : st::node<std::int64_t, std::int64_t> {
  std::int64_t n = 0;
  void consume(std::int64_t& x) {
    ++n;
    send_next(x);
  }
  void on_stop() { send_next(-1'000'000 - n); }
};
}  // namespace

TEST_P(ordered_farm, outputs_of_on_stop_come_after_every_ordered_output) {
  troupe::actor_system sys{cfg()};
  constexpr std::int64_t n = 5'000;
  std::vector<std::int64_t> got;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{counting_source(n), troupe::farm{counts_at_stop{}, 3, troupe::round_robin{}, troupe::ordered},
                       st::sink([&](std::int64_t x) { got.push_back(x); })},
      opts());
  g.wait();
  ASSERT_EQ(got.size(), static_cast<std::size_t>(n + 3));
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], i);
  std::int64_t total = 0;
  for (std::size_t i = n; i < got.size(); ++i) total += -1'000'000 - got[i];
  EXPECT_EQ(total, n);  // the three counts add up to every input
}

TEST_P(ordered_farm, answers_plain_sends_in_the_order_they_were_sent) {
  troupe::actor_system sys{cfg()};
  troupe::scoped_actor self{sys};
  auto p = troupe::spawn_pattern(sys,
                                 troupe::farm{troupe::seq{[](std::int64_t x) {
                                                jitter(x);
                                                return x * 10;
                                              }},
                                              4, troupe::round_robin{}, troupe::ordered},
                                 opts());
  constexpr std::int64_t n = 2'000;
  for (std::int64_t i = 0; i < n; ++i) self->send(p, i);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t got = -1;
    self->receive([&](std::int64_t v) { got = v; });
    ASSERT_EQ(got, i * 10);
  }
}

INSTANTIATE_TEST_SUITE_P(placements, ordered_farm, troupe_test::every_placement(), troupe_test::placement_name);
