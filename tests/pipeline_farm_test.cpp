// seq, pipeline, farm (routing policies, order), spawn_pattern from actors
// (requests and plain sends answered by the graph), router elimination.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "troupe/troupe.hpp"

using namespace std::chrono_literals;

namespace {

template <class Out, class In>
Out ask(troupe::actor_system& sys, const troupe::actor& p, In in) {
  troupe::scoped_actor self{sys};
  Out out{};
  self->request(p, 10s, std::move(in))
      .receive([&](Out& v) { out = std::move(v); }, [](troupe::error& e) { ADD_FAILURE() << e.to_string(); });
  return out;
}

struct item {
  int key;
  int value;
};

// A stage that records which replica (thread-independent id) saw which key.
struct key_recorder {
  std::shared_ptr<std::mutex> mtx;
  std::shared_ptr<std::map<int, std::set<int>>> seen;  // key -> replica ids
  std::shared_ptr<std::atomic<int>> next_id;
  int id = -1;
  item operator()(item it) {
    if (id < 0) id = next_id->fetch_add(1);  // each replica has its own copy of this object
    std::lock_guard<std::mutex> g{*mtx};
    (*seen)[it.key].insert(id);
    return it;
  }
};

}  // namespace

TEST(pipeline, three_stages_answer_the_requester) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto p = troupe::spawn_pattern(
      sys, troupe::pipeline{troupe::seq{[](int x) { return x + 1; }}, troupe::seq{[](int x) { return x * 10; }},
                            troupe::seq{[](int x) { return std::to_string(x); }}});
  EXPECT_EQ(ask<std::string>(sys, p, 4), "50");
}

// The misuse cases (a mismatch among them) are compile-fail tests:
// tests/compile_fail/.
TEST(pipeline, stage_concepts_tell_stages_apart) {
  using a = troupe::seq<int (*)(int)>;  // int -> int
  static_assert(troupe::stage<a>);
  static_assert(troupe::stage<troupe::pipeline<a, a>>);
  static_assert(troupe::stage<troupe::farm<a>>);
  static_assert(!troupe::stage<int>);
  static_assert(!troupe::stage_types_match<int, std::string>);
}

TEST(farm, round_robin_farm_answers_every_request) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto p = troupe::spawn_pattern(sys, troupe::farm{troupe::seq{[](int x) { return x * x; }}, 4});
  troupe::scoped_actor self{sys};
  constexpr int n = 2000;
  std::vector<int> got(n, -1);
  for (int i = 0; i < n; ++i)
    self->request(p, 10s, i).receive([&](int v) { got[i] = v; }, [](troupe::error& e) { FAIL() << e.to_string(); });
  for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], i * i);
}

TEST(farm, every_policy_delivers_every_item_exactly_once) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  auto collect = [&](const troupe::actor& p, int n) {
    for (int i = 0; i < n; ++i) self->send(p, i);
    std::multiset<int> seen;
    for (int i = 0; i < n; ++i) self->receive([&](int v) { seen.insert(v); });
    return seen;
  };
  auto twice = troupe::seq{[](int x) { return 2 * x; }};
  constexpr int n = 500;
  std::multiset<int> expected;
  for (int i = 0; i < n; ++i) expected.insert(2 * i);
  auto me = self.handle();
  EXPECT_EQ(collect(troupe::spawn_pattern(sys, troupe::farm{twice, 3, troupe::random_choice{}}, {.results_to = me}), n),
            expected);
  EXPECT_EQ(collect(troupe::spawn_pattern(sys, troupe::farm{twice, 3, troupe::least_loaded{}}, {.results_to = me}), n),
            expected);
  EXPECT_EQ(collect(troupe::spawn_pattern(
                        sys, troupe::farm{twice, 3, [](const int& x, std::size_t r) { return std::size_t(x) % r; }},
                        {.results_to = me}),
                    n),
            expected);
}

TEST(farm, broadcast_gives_every_replica_a_copy) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  auto p = troupe::spawn_pattern(sys, troupe::farm{troupe::seq{[](int x) { return x; }}, 4, troupe::broadcast{}},
                                 {.results_to = self.handle()});
  for (int i = 0; i < 10; ++i) self->send(p, i);
  std::map<int, int> copies;
  for (int i = 0; i < 40; ++i) self->receive([&](int v) { ++copies[v]; });
  for (int i = 0; i < 10; ++i) EXPECT_EQ(copies[i], 4);
}

TEST(farm, by_key_keeps_every_key_on_one_replica) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  key_recorder rec{std::make_shared<std::mutex>(), std::make_shared<std::map<int, std::set<int>>>(),
                   std::make_shared<std::atomic<int>>(0)};
  auto p = troupe::spawn_pattern(
      sys, troupe::farm{troupe::seq{rec}, 4, troupe::by_key{[](const item& it) { return it.key; }}},
      {.results_to = self.handle()});
  std::mt19937 rng{1};
  for (int i = 0; i < 2000; ++i) self->send(p, item{static_cast<int>(rng() % 50), i});
  for (int i = 0; i < 2000; ++i) self->receive([](item&) {});
  std::lock_guard<std::mutex> g{*rec.mtx};
  EXPECT_EQ(rec.seen->size(), 50u);
  for (auto& [key, replicas] : *rec.seen) EXPECT_EQ(replicas.size(), 1u) << "key " << key;
}

TEST(farm, ordered_farm_keeps_input_order_under_random_delays) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  auto slow = troupe::seq{[](int x) {
    thread_local std::mt19937 rng{std::random_device{}()};
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
    return x;
  }};
  auto p = troupe::spawn_pattern(sys, troupe::farm{slow, 4, troupe::round_robin{}, troupe::ordered},
                                 {.results_to = self.handle()});
  constexpr int n = 300;
  for (int i = 0; i < n; ++i) self->send(p, i);
  std::vector<int> order;
  for (int i = 0; i < n; ++i) self->receive([&](int v) { order.push_back(v); });
  for (int i = 0; i < n; ++i) ASSERT_EQ(order[i], i);
}

TEST(farm, exception_in_a_worker_reaches_the_requester_and_the_farm_goes_on) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto p = troupe::spawn_pattern(sys,
                                 troupe::farm{troupe::seq{[](int x) {
                                                if (x == 13) throw std::runtime_error("unlucky");
                                                return x;
                                              }},
                                              2, troupe::round_robin{}, troupe::ordered},
                                 {.on_error = troupe::stream::failure::skip});
  troupe::scoped_actor self{sys};
  troupe::error got;
  self->request(p, 10s, 13).receive([](int) { ADD_FAILURE(); }, [&](troupe::error& e) { got = e; });
  EXPECT_EQ(got.code(), troupe::errc::unhandled_exception);
  EXPECT_NE(got.message().find("unlucky"), std::string::npos);
  EXPECT_EQ(ask<int>(sys, p, 14), 14);  // the reorder stage was not stalled by the failure
}

TEST(pipeline, farm_into_farm_has_no_router_in_between) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto before = sys.live_actors();
  auto p = troupe::spawn_pattern(sys, troupe::pipeline{troupe::farm{troupe::seq{[](int x) { return x + 1; }}, 4},
                                                       troupe::farm{troupe::seq{[](int x) { return x * 2; }}, 3}});
  // One actor (the entry); 4 + 3 replicas and the reply stage: nothing between the farms.
  EXPECT_EQ(sys.live_actors() - before, 1u);
  auto nodes = p.metrics().nodes;
  ASSERT_EQ(nodes.size(), 8u);
  EXPECT_EQ(nodes.back().name, "reply");
  EXPECT_EQ(ask<int>(sys, p, 5), 12);
  // and an item passes through exactly one replica per stage (a runner
  // publishes its counts after its batch, which may be after the answer)
  std::uint64_t in = 0;
  for (auto until = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < until;) {
    in = 0;
    for (auto& n : p.metrics().nodes) in += n.items_in;
    if (in >= 3) break;
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(in, 3u);
}

TEST(pipeline, nesting_farm_of_pipelines_and_map_stage) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto inner = troupe::pipeline{troupe::seq{[](std::vector<int> v) { return v; }},
                                troupe::map_stage{[](int x) { return x * 3; }}, troupe::seq{[](std::vector<int> v) {
                                  long s = 0;
                                  for (int x : v) s += x;
                                  return s;
                                }}};
  auto p = troupe::spawn_pattern(sys, troupe::farm{inner, 2});
  std::vector<int> data(1000);
  std::iota(data.begin(), data.end(), 0);
  EXPECT_EQ(ask<long>(sys, p, data), 3L * 999 * 1000 / 2);
}

TEST(spawn_pattern, plain_send_result_goes_to_the_sender) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto p = troupe::spawn_pattern(sys, troupe::seq{[](int x) { return x + 100; }});
  troupe::scoped_actor self{sys};
  self->send(p, 1);
  int got = 0;
  self->receive([&](int v) { got = v; });
  EXPECT_EQ(got, 101);
}

TEST(pipeline, an_existing_actor_as_a_stage) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto formatter = sys.spawn([](troupe::event_actor&) {
    return troupe::behavior{[](int x) -> std::string {
      if (x < 0) throw std::invalid_argument("negative");
      return "#" + std::to_string(x);
    }};
  });
  auto p = troupe::spawn_pattern(
      sys, troupe::pipeline{troupe::seq{[](int x) { return x - 1; }}, troupe::seq_actor<int, std::string>{formatter}});
  EXPECT_EQ(ask<std::string>(sys, p, 43), "#42");
  troupe::scoped_actor self{sys};
  troupe::error got;
  self->request(p, 10s, 0).receive([](std::string&) { ADD_FAILURE(); }, [&](troupe::error& e) { got = e; });
  EXPECT_EQ(got.code(), troupe::errc::unhandled_exception);  // the default: the failure ends the graph
  EXPECT_NE(got.message().find("negative"), std::string::npos);
}
