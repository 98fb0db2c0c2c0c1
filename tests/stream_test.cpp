// Stream graphs: nodes, channels, routing, end of stream, errors, placement.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <atomic>

#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "placements.hpp"
#include "troupe/troupe.hpp"

namespace st = troupe::stream;
using namespace std::chrono_literals;

namespace {

// What a sink saw: how often each value arrived.
struct seen {
  std::mutex mtx;
  std::map<std::int64_t, int> count;
  std::int64_t total = 0;
  void add(std::int64_t v) {
    std::lock_guard<std::mutex> g{mtx};
    ++count[v];
    ++total;
  }
  // Every value of 0 .. n-1 exactly `times` times, nothing else.
  void expect_each(std::int64_t n, int times) {
    std::lock_guard<std::mutex> g{mtx};
    EXPECT_EQ(total, n * times);
    EXPECT_EQ(static_cast<std::int64_t>(count.size()), n);
    for (auto& [v, c] : count) {
      EXPECT_GE(v, 0);
      EXPECT_LT(v, n);
      ASSERT_EQ(c, times) << "value " << v;
    }
  }
};

using stream_placement = troupe_test::placed_test;
using troupe_test::counting_source;

}  // namespace

TEST_P(stream_placement, pipeline_delivers_every_element_once) {
  troupe::actor_system sys{cfg()};
  seen s;
  constexpr std::int64_t n = 200'000;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{counting_source(n), st::map([](std::int64_t x) { return x + 1; }),
                       st::map([](std::int64_t x) { return x - 1; }), st::sink([&](std::int64_t x) { s.add(x); })},
      opts());
  g.wait();
  s.expect_each(n, 1);
}

TEST_P(stream_placement, pipeline_keeps_order_with_one_replica_per_stage) {
  troupe::actor_system sys{cfg()};
  std::vector<std::int64_t> got;
  constexpr std::int64_t n = 100'000;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{counting_source(n), st::filter([](const std::int64_t& x) { return x % 3 != 0; }),
                       st::sink([&](std::int64_t x) { got.push_back(x); })},
      opts());
  g.wait();
  std::vector<std::int64_t> want;
  for (std::int64_t i = 0; i < n; ++i)
    if (i % 3 != 0) want.push_back(i);
  EXPECT_EQ(got, want);
}

TEST_P(stream_placement, farm_round_robin_delivers_every_element_once) {
  troupe::actor_system sys{cfg()};
  seen s;
  constexpr std::int64_t n = 100'000;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{counting_source(n), troupe::farm{st::map([](std::int64_t x) { return x; }), 4},
                       troupe::farm{st::sink([&](std::int64_t x) { s.add(x); }), 3}},
      opts());
  g.wait();
  s.expect_each(n, 1);
  auto m = g.metrics();
  std::uint64_t into_sinks = 0;
  for (auto& node : m.nodes)
    if (node.name == "sink") into_sinks += node.items_in;
  EXPECT_EQ(into_sinks, static_cast<std::uint64_t>(n));
}

TEST_P(stream_placement, farms_of_sources_and_random_routing) {
  troupe::actor_system sys{cfg()};
  std::atomic<std::int64_t> count{0}, sum{0};
  constexpr std::int64_t n = 20'000;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{troupe::farm{counting_source(n), 3},
                       troupe::farm{st::map([](std::int64_t x) { return 2 * x; }), 2, troupe::random_choice{}},
                       st::sink([&](std::int64_t x) {
                         count.fetch_add(1, std::memory_order_relaxed);
                         sum.fetch_add(x, std::memory_order_relaxed);
                       })},
      opts());
  g.wait();
  EXPECT_EQ(count.load(), 3 * n);
  EXPECT_EQ(sum.load(), 3 * n * (n - 1));
}

namespace {
// A sink replica that records which replica saw each key.
struct key_recorder : st::node<std::int64_t, void> {
  std::shared_ptr<std::atomic<int>> ids;
  std::shared_ptr<std::mutex> mtx;
  std::shared_ptr<std::map<std::int64_t, std::set<int>>> where;
  int me = -1;
  void on_start() { me = ids->fetch_add(1); }
  void consume(std::int64_t& x) {
    std::lock_guard<std::mutex> g{*mtx};
    (*where)[x % 50].insert(me);
  }
};
}  // namespace

TEST_P(stream_placement, by_key_sends_each_key_to_one_replica) {
  troupe::actor_system sys{cfg()};
  key_recorder proto;
  proto.ids = std::make_shared<std::atomic<int>>(0);
  proto.mtx = std::make_shared<std::mutex>();
  proto.where = std::make_shared<std::map<std::int64_t, std::set<int>>>();
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{troupe::farm{counting_source(10'000), 2},
                       troupe::farm{proto, 4, troupe::by_key{[](const std::int64_t& x) { return x % 50; }}}},
      opts());
  g.wait();
  EXPECT_EQ(proto.ids->load(), 4);
  ASSERT_EQ(proto.where->size(), 50u);
  std::set<int> used;
  for (auto& [key, replicas] : *proto.where) {
    EXPECT_EQ(replicas.size(), 1u) << "key " << key;
    used.insert(*replicas.begin());
  }
  EXPECT_GT(used.size(), 1u);  // 50 keys over 4 replicas
}

TEST_P(stream_placement, broadcast_gives_every_replica_every_element) {
  troupe::actor_system sys{cfg()};
  seen s;
  constexpr std::int64_t n = 20'000;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{counting_source(n),
                       troupe::farm{st::map([](std::int64_t x) { return x; }), 3, troupe::broadcast{}},
                       st::sink([&](std::int64_t x) { s.add(x); })},
      opts());
  g.wait();
  s.expect_each(n, 3);
}

TEST_P(stream_placement, least_loaded_and_user_policy_deliver_everything) {
  troupe::actor_system sys{cfg()};
  seen a, b;
  constexpr std::int64_t n = 20'000;
  auto g1 = troupe::spawn_pattern(
      sys,
      troupe::pipeline{counting_source(n),
                       troupe::farm{st::sink([&](std::int64_t x) { a.add(x); }), 3, troupe::least_loaded{}}},
      opts());
  auto g2 = troupe::spawn_pattern(
      sys,
      troupe::pipeline{counting_source(n), troupe::farm{st::sink([&](std::int64_t x) { b.add(x); }), 3,
                                                        [](const std::int64_t& x, std::size_t replicas) {
                                                          return static_cast<std::size_t>(x) % replicas;
                                                        }}},
      opts());
  g1.wait();
  g2.wait();
  a.expect_each(n, 1);
  b.expect_each(n, 1);
}

namespace {
// Counts its inputs and emits their sum once, at the end of the stream.
struct summer : st::node<std::int64_t, std::int64_t> {
  std::int64_t sum = 0;
  std::shared_ptr<std::atomic<int>> stops = std::make_shared<std::atomic<int>>(0);
  void consume(std::int64_t& x) { sum += x; }
  void on_stop() {
    stops->fetch_add(1);
    send_next(std::move(sum));
  }
};
}  // namespace

TEST_P(stream_placement, end_of_stream_drains_and_on_stop_can_still_send) {
  troupe::actor_system sys{cfg()};
  summer proto;
  std::vector<std::int64_t> sums;
  constexpr std::int64_t n = 50'000;
  auto g = troupe::spawn_pattern(sys,
                                 troupe::pipeline{counting_source(n), troupe::farm{proto, 4},
                                                  st::sink([&](std::int64_t s) { sums.push_back(s); })},
                                 opts());
  g.wait();
  EXPECT_EQ(proto.stops->load(), 4);
  ASSERT_EQ(sums.size(), 4u);
  EXPECT_EQ(std::accumulate(sums.begin(), sums.end(), std::int64_t{0}), n * (n - 1) / 2);
}

TEST_P(stream_placement, exception_in_a_node_stops_the_graph_and_reaches_wait) {
  troupe::actor_system sys{cfg()};
  // An endless source: only the error can end this graph.
  auto endless = st::source([i = std::int64_t{0}]() mutable -> std::optional<std::int64_t> { return i++; });
  auto g = troupe::spawn_pattern(sys,
                                 troupe::pipeline{endless,
                                                  troupe::farm{st::map([](std::int64_t x) {
                                                                 if (x == 5000)
                                                                   throw std::runtime_error{"bad element 5000"};
                                                                 return x;
                                                               }),
                                                               2},
                                                  st::sink([](std::int64_t) {})},
                                 opts());
  try {
    g.wait();
    FAIL() << "wait() returned normally";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "bad element 5000");
  }
  EXPECT_TRUE(g.done());
}

TEST_P(stream_placement, more_nodes_than_workers_never_deadlocks) {
  troupe::actor_system sys{cfg()};
  seen s;
  constexpr std::int64_t n = 30'000;
  auto id = [](std::int64_t x) { return x; };
  auto o = opts();
  o.capacity = 4;
  auto g =
      troupe::spawn_pattern(sys,
                            troupe::pipeline{counting_source(n), st::map(id), troupe::farm{st::map(id), 3}, st::map(id),
                                             st::map(id), troupe::farm{st::map(id), 2, troupe::broadcast{}},
                                             st::map(id), st::map(id), st::sink([&](std::int64_t x) { s.add(x); })},
                            o);
  g.wait();
  s.expect_each(n, 2);
}

TEST_P(stream_placement, branches_give_every_branch_every_element_and_merge) {
  troupe::actor_system sys{cfg()};
  seen s;
  constexpr std::int64_t n = 30'000;
  // Branch 0 keeps x, branch 1 (two stages) maps x to n + x, branch 2 (a
  // keyed farm) maps x to 2n + x: every value of 0 .. 3n-1 once at the sink.
  auto o = opts();
  o.capacity = 8;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{
          troupe::farm{counting_source(n), 1},
          troupe::branches{st::map([](std::int64_t x) { return x; }),
                           troupe::pipeline{st::map([](std::int64_t x) { return x + 1; }),
                                            troupe::farm{st::map([](std::int64_t x) { return n + x - 1; }), 2}},
                           troupe::farm{st::map([](std::int64_t x) { return 2 * n + x; }), 3,
                                        troupe::by_key{[](const std::int64_t& x) { return x % 7; }}}},
          troupe::farm{st::sink([&](std::int64_t x) { s.add(x); }), 2}},
      o);
  g.wait();
  s.expect_each(3 * n, 1);
  // Metrics list the branches' runners in graph order.
  const auto m = g.metrics();
  ASSERT_EQ(m.nodes.size(), 1u + 1u + 3u + 3u + 2u);
  EXPECT_EQ(m.nodes[0].name, "source");
  EXPECT_EQ(m.nodes[0].items_out, static_cast<std::uint64_t>(n));
}

namespace {
// Tags every 100th element with a marker (-1 - x) sent to every replica.
struct marker_source : st::node<void, std::int64_t> {
  std::int64_t i = 0, n = 0;
  bool produce() {
    if (i == n) return false;
    if (i % 100 == 0) send_all(-1 - i);
    send_next(std::int64_t{i});
    ++i;
    return true;
  }
};
// Remembers, per replica, the markers it saw and the elements before each.
struct marker_checker : st::node<std::int64_t, void> {
  std::shared_ptr<std::mutex> mtx = std::make_shared<std::mutex>();
  std::shared_ptr<std::vector<std::vector<std::int64_t>>> markers =
      std::make_shared<std::vector<std::vector<std::int64_t>>>();
  std::shared_ptr<std::atomic<int>> late = std::make_shared<std::atomic<int>>(0);
  std::vector<std::int64_t> mine;
  std::int64_t last_marker = -1;
  void consume(std::int64_t& x) {
    if (x < 0) {
      mine.push_back(-1 - x);
      last_marker = -1 - x;
    } else if (x < last_marker) {
      late->fetch_add(1);  // an element sent before the last marker arrived after it
    }
  }
  void on_stop() {
    std::lock_guard<std::mutex> g{*mtx};
    markers->push_back(mine);
  }
};
}  // namespace

TEST_P(stream_placement, send_all_reaches_every_replica_in_order) {
  troupe::actor_system sys{cfg()};
  marker_source src;
  src.n = 20'000;
  marker_checker chk;
  auto o = opts();
  o.capacity = 4;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{
          src,
          troupe::branches{troupe::farm{chk, 3, troupe::by_key{[](const std::int64_t& x) { return x < 0 ? 0 : x; }}},
                           troupe::farm{chk, 2}}},
      o);
  g.wait();
  ASSERT_EQ(chk.markers->size(), 5u);
  std::vector<std::int64_t> expected;
  for (std::int64_t i = 0; i < src.n; i += 100) expected.push_back(i);
  for (auto& m : *chk.markers) EXPECT_EQ(m, expected);
  EXPECT_EQ(chk.late->load(), 0);
}

// Producers publish their pushes in groups (outlet::push): an element must
// still go on at once when its producer's input runs dry, not wait for more
// input or the end of the stream. One element at a time, each awaited at the
// end of an open graph (a stranded one would hang here until the deadline).
TEST_P(stream_placement, a_lone_element_goes_through_an_open_graph) {
  troupe::actor_system sys{cfg()};
  std::atomic<std::int64_t> got{0}, last{-1};
  auto collector = sys.spawn([&](troupe::event_actor&) {
    return troupe::behavior{[&](std::int64_t x) {
      last.store(x);
      got.fetch_add(1);
    }};
  });
  auto o = opts();
  o.results_to = collector;
  auto g = troupe::spawn_pattern(sys,
                                 troupe::pipeline{st::map([](std::int64_t x) { return x + 1; }),
                                                  troupe::farm{st::map([](std::int64_t x) { return x * 2; }), 2},
                                                  st::map([](std::int64_t x) { return x - 1; })},
                                 o);
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  for (std::int64_t i = 0; i < 100; ++i) {
    sys.send(g, i);
    while (got.load() < i + 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(100us);
    ASSERT_EQ(got.load(), i + 1) << "element " << i << " did not come through while the stream was open";
    EXPECT_EQ(last.load(), (i + 1) * 2 - 1);
  }
  g.close();
  g.wait();
}

TEST_P(stream_placement, every_node_knows_its_replica) {
  troupe::actor_system sys{cfg()};
  std::mutex mtx;
  std::set<std::pair<std::size_t, std::size_t>> seen;
  struct who : st::node<std::int64_t, void> {
    std::mutex* mtx;
    std::set<std::pair<std::size_t, std::size_t>>* seen;
    void consume(std::int64_t&) {
      std::lock_guard<std::mutex> guard{*mtx};
      seen->emplace(replica_index(), replica_count());
    }
  };
  who w;
  w.mtx = &mtx;
  w.seen = &seen;
  auto g = troupe::spawn_pattern(sys, troupe::pipeline{counting_source(1'000), troupe::farm{w, 3}}, opts());
  g.wait();
  EXPECT_EQ(seen, (std::set<std::pair<std::size_t, std::size_t>>{{0, 3}, {1, 3}, {2, 3}}));
}

INSTANTIATE_TEST_SUITE_P(placements, stream_placement, troupe_test::every_placement(), troupe_test::placement_name);

// ---------------------------------------------------------------- send_next_if

namespace {
// Tries to send 0 .. 99 with send_next_if(limit) once, counting successes.
struct trying_source : st::node<void, std::int64_t> {
  std::size_t limit = 0;
  std::shared_ptr<std::atomic<int>> sent = std::make_shared<std::atomic<int>>(0);
  std::shared_ptr<std::atomic<bool>> finished = std::make_shared<std::atomic<bool>>(false);
  std::int64_t i = 0;
  bool produce() {
    if (i == 100) {
      finished->store(true);
      return false;
    }
    std::int64_t v = i++;
    if (send_next_if(v, limit)) sent->fetch_add(1);
    else EXPECT_EQ(v, i - 1) << "a refused value must be left as it was";
    return true;
  }
};
}  // namespace

TEST(stream_send_next_if, sends_only_below_the_limit_and_tries_every_round_robin_replica) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  for (std::size_t replicas : {1u, 3u}) {
    trying_source src;
    src.limit = 4;
    auto finished = src.finished;
    std::atomic<int> received{0};
    // The sinks hold on to their first element until the source has tried
    // everything, so the channels only fill up meanwhile.
    auto g = troupe::spawn_pattern(sys,
                                   troupe::pipeline{src, troupe::farm{st::sink([&](std::int64_t) {
                                                                        while (!finished->load())
                                                                          std::this_thread::sleep_for(1ms);
                                                                        received.fetch_add(1);
                                                                      }),
                                                                      replicas}},
                                   st::options{.capacity = 64, .placement = troupe::placement::own_thread()});
    g.wait();
    EXPECT_EQ(src.sent->load(), static_cast<int>(4 * replicas)) << replicas << " replicas";
    EXPECT_EQ(received.load(), src.sent->load());
  }
}

TEST(stream_send_next_if, limit_zero_never_sends) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  trying_source src;
  src.limit = 0;
  std::atomic<int> received{0};
  auto g = troupe::spawn_pattern(sys, troupe::pipeline{src, st::sink([&](std::int64_t) { received.fetch_add(1); })});
  g.wait();
  EXPECT_EQ(src.sent->load(), 0);
  EXPECT_EQ(received.load(), 0);
}

// ---------------------------------------------------------------- actors around a graph

TEST(stream_actors, actors_feed_the_entry_and_an_actor_receives_the_results) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  std::atomic<std::int64_t> got{0}, sum{0};
  auto collector = sys.spawn([&](troupe::event_actor&) {
    return troupe::behavior{[&](std::int64_t x) {
      sum.fetch_add(x);
      got.fetch_add(1);
    }};
  });
  st::options o;
  o.results_to = collector;
  o.notify = self->self();
  auto g =
      troupe::spawn_pattern(sys, troupe::pipeline{troupe::farm{st::map([](std::int64_t x) { return x * 10; }), 2}}, o);
  // Three actors send 1000 elements each.
  for (int a = 0; a < 3; ++a) {
    sys.spawn([g](troupe::event_actor& me) {
      for (std::int64_t i = 0; i < 1000; ++i) me.send(g, i);
      me.quit();
      return troupe::behavior{};
    });
  }
  auto into_graph = [&] {
    std::uint64_t n = 0;
    for (auto& node : g.metrics().nodes)
      if (node.name == "map") n += node.items_in;
    return n;
  };
  while (into_graph() < 3000) std::this_thread::sleep_for(1ms);
  g.close();
  g.wait();
  bool notified = false;
  self->receive([&](st::completed& c) {
    notified = true;
    EXPECT_FALSE(c.error) << c.error.to_string();
    EXPECT_EQ(c.failed, 0u);
  });
  EXPECT_TRUE(notified);
  while (got.load() < 3000) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(got.load(), 3000);
  EXPECT_EQ(sum.load(), 3 * 10 * 999 * 1000 / 2);
}

TEST(stream_actors, end_of_stream_message_ends_the_input) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  std::atomic<int> got{0};
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{st::sink([&](const std::string& s) { got += static_cast<int>(s.size()); })});
  for (int i = 0; i < 100; ++i) sys.send(g, std::string{"abc"});
  sys.send(g, st::end_of_stream{});
  g.wait();
  EXPECT_EQ(got.load(), 300);
}

TEST(stream_actors, error_is_reported_to_the_notified_actor) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  st::options o;
  o.notify = self->self();
  auto g = troupe::spawn_pattern(sys, troupe::pipeline{counting_source(100), st::sink([](std::int64_t x) {
                                                         if (x == 42) throw std::invalid_argument{"no 42 here"};
                                                       })},
                                 o);
  EXPECT_THROW(g.wait(), std::invalid_argument);
  troupe::error error;
  self->receive([&](st::completed& c) { error = c.error; });
  EXPECT_EQ(error.code(), troupe::errc::unhandled_exception);
  EXPECT_EQ(error.message(), "stream node 'sink' (replica 0) failed: no 42 here");
  EXPECT_EQ(g.error(), error);
}

TEST(stream_actors, cancel_stops_an_endless_graph) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{st::source([]() -> std::optional<int> { return 1; }), st::sink([](int) {})});
  EXPECT_FALSE(g.wait_for(10ms));
  g.cancel();
  g.wait();
  EXPECT_TRUE(g.done());
}

// ---------------------------------------------------------------- configuration errors

TEST(stream_config, bad_options_and_affinity_are_reported) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto p = troupe::pipeline{counting_source(10), st::sink([](std::int64_t) {})};
  EXPECT_THROW(troupe::spawn_pattern(sys, p, st::options{.capacity = 0}), std::invalid_argument);
  EXPECT_THROW(troupe::spawn_pattern(sys, p, st::options{.batch = 0}), std::invalid_argument);
  EXPECT_THROW(troupe::spawn_pattern(sys, p, st::options{.placement = troupe::placement::own_thread("<0")}),
               troupe::affinity_error);
  EXPECT_THROW(troupe::placed(st::sink([](int) {}), troupe::placement::own_thread("<0-x>")), troupe::affinity_error);
  EXPECT_THROW(troupe::farm(st::sink([](int) {}), -1), std::invalid_argument);
  // A graph whose last stage emits with nowhere to go, and an ordered farm of
  // a sink, do not compile: tests/compile_fail/.
}

// ---------------------------------------------------------------- mixed placement, metrics

namespace {
struct stamped_item {
  std::uint64_t stamp;
  std::int64_t value;
};
}  // namespace

TEST(stream_metrics, counts_and_latency_are_recorded_and_dumped) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const std::string path = ::testing::TempDir() + "stream_metrics.json";
  st::options o;
  o.latency_sample = 1;
  o.metrics_json = path;
  std::atomic<std::int64_t> got{0};
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{st::source([i = 0]() mutable -> std::optional<stamped_item> {
                         if (i == 1000) return std::nullopt;
                         return stamped_item{st::now(), i++};
                       }),
                       troupe::placed{st::filter([](const stamped_item& x) { return x.value % 2 == 0; }),
                                      troupe::placement::own_thread()},
                       st::sink([&](const stamped_item&) { ++got; })},
      o);
  g.wait();
  EXPECT_EQ(got.load(), 500);
  auto m = g.metrics();
  ASSERT_EQ(m.nodes.size(), 3u);
  std::map<std::string, st::node_metrics> by_name;
  for (auto& n : m.nodes) by_name[n.name] = n;
  EXPECT_EQ(by_name["source"].items_out, 1000u);
  EXPECT_EQ(by_name["filter"].items_in, 1000u);
  EXPECT_EQ(by_name["filter"].items_out, 500u);
  EXPECT_TRUE(by_name["filter"].dedicated);
  EXPECT_FALSE(by_name["sink"].dedicated);
  EXPECT_EQ(by_name["sink"].items_in, 500u);
  EXPECT_EQ(m.latency.count(), 500u);
  EXPECT_LE(m.latency.min(), m.latency.percentile(0.5));
  EXPECT_LE(m.latency.percentile(0.5), m.latency.max());
  std::ifstream f{path};
  std::string json{std::istreambuf_iterator<char>{f}, {}};
  EXPECT_NE(json.find("\"name\":\"filter\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"count\":500"), std::string::npos) << json;
}

// A sink measures one element in latency_sample: per element below
// drain_chunk (64), per run from it on, where runs end before each element
// due. Either way the count is exact, with runs cut short by a small channel.
TEST(stream_metrics, a_sink_measures_exactly_one_element_in_latency_sample) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  for (const std::size_t every : {1, 7, 64, 100, 1000}) {
    for (const std::size_t capacity : {4, 1024}) {
      st::options o;
      o.latency_sample = every;
      o.capacity = capacity;
      std::atomic<std::int64_t> got{0};
      auto g = troupe::spawn_pattern(sys,
                                     troupe::pipeline{st::source([i = 0]() mutable -> std::optional<stamped_item> {
                                                        if (i == 2000) return std::nullopt;
                                                        return stamped_item{st::now(), i++};
                                                      }),
                                                      st::sink([&](const stamped_item& x) {
                                                        if (x.value == got.load(std::memory_order_relaxed)) ++got;
                                                      })},
                                     o);
      g.wait();
      EXPECT_EQ(got.load(), 2000) << "every " << every << ", capacity " << capacity;  // all, in order
      EXPECT_EQ(g.metrics().latency.count(), 2000 / every) << "every " << every << ", capacity " << capacity;
    }
  }
}

namespace {
// Sends each input once, a copy to all on every third and one more with
// send_next_if on every fifth when there is room; counts what it sent.
struct sends_three_ways : st::node<std::int64_t, std::int64_t> {
  std::shared_ptr<std::atomic<std::int64_t>> sent = std::make_shared<std::atomic<std::int64_t>>(0);
  void consume(std::int64_t& x) {
    const auto v = x;
    send_next(std::int64_t{v});
    ++*sent;
    if (v % 3 == 0) {
      send_all(std::int64_t{v});
      ++*sent;
    }
    if (v % 5 == 0) {
      std::int64_t w = v;
      if (send_next_if(w, 3)) ++*sent;
    }
  }
};
}  // namespace

// Items out of a node with one channel are counted from the channel's index
// while nothing is parked, and by each send otherwise: sends at window ends,
// parks, send_next_if and send_all into one channel all count once.
TEST(stream_metrics, items_out_count_every_send_through_parks_and_window_ends) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  for (const std::size_t capacity : {2, 8, 1024}) {
    sends_three_ways node;
    auto sent = node.sent;
    std::atomic<std::int64_t> got{0};
    st::options o;
    o.capacity = capacity;
    auto g = troupe::spawn_pattern(
        sys, troupe::pipeline{counting_source(20'000), node, st::sink([&](std::int64_t) { ++got; })}, o);
    g.wait();
    const auto m = g.metrics();
    ASSERT_EQ(m.nodes.size(), 3u);
    EXPECT_EQ(got.load(), sent->load()) << "capacity " << capacity;
    EXPECT_EQ(m.nodes[0].items_out, 20'000u);
    EXPECT_EQ(m.nodes[1].items_in, 20'000u);
    EXPECT_EQ(m.nodes[1].items_out, static_cast<std::uint64_t>(sent->load())) << "capacity " << capacity;
    EXPECT_EQ(m.nodes[2].items_in, static_cast<std::uint64_t>(sent->load())) << "capacity " << capacity;
  }
}

TEST(stream_metrics, histogram_percentiles_match_known_values) {
  st::latency_histogram h;
  for (std::uint64_t v = 1; v <= 1000; ++v) h.record(v * 1000);
  EXPECT_EQ(h.count(), 1000u);
  auto within = [](std::uint64_t got, std::uint64_t want) { return got <= want && got * 1.07 >= want; };
  EXPECT_TRUE(within(h.percentile(0.5), 500'000)) << h.percentile(0.5);
  EXPECT_TRUE(within(h.percentile(0.95), 950'000)) << h.percentile(0.95);
  EXPECT_TRUE(within(h.min(), 1000)) << h.min();
  EXPECT_TRUE(within(h.max(), 1'000'000)) << h.max();
  // The sum, each value taken as the middle of its bucket: within 1/32.
  const double sum = 1000.0 * 1001 / 2 * 1000;
  EXPECT_NEAR(h.approximate_sum(), sum, sum / 32);
  st::latency_histogram small;  // values below 16 have a bucket each: exact
  for (std::uint64_t v : {0U, 3U, 3U, 15U}) small.record(v);
  EXPECT_EQ(small.approximate_sum(), 21.0);
  EXPECT_EQ(st::latency_histogram{}.approximate_sum(), 0.0);
}

TEST(stream_metrics, to_json_escapes_names_and_keeps_control_characters_visible) {
  st::graph_metrics m;
  m.nodes.push_back(st::node_metrics{.name = "a\"b\\c\nd"});
  const auto json = m.to_json();
  EXPECT_NE(json.find("\"name\":\"a\\\"b\\\\c\\u000ad\""), std::string::npos) << json;
}

// ---------------------------------------------------------------- idle graphs

namespace {
double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}
}  // namespace

TEST(stream_idle, a_graph_waiting_for_input_sleeps) {
  for (const auto& where : {troupe::placement::pool(), troupe::placement::own_thread()}) {
    troupe::actor_system sys{troupe::config{.workers = 2, .polling = troupe::polling::moderate}};
    std::atomic<int> got{0};
    st::options o;
    o.placement = where;
    auto g = troupe::spawn_pattern(
        sys,
        troupe::pipeline{st::map([](int x) { return x + 1; }), troupe::farm{st::map([](int x) { return x; }), 2},
                         st::sink([&](int) { ++got; })},
        o);
    for (int i = 0; i < 1000; ++i) sys.send(g, i);
    while (got.load() < 1000) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(50ms);  // let nodes and workers finish spinning
    auto cpu0 = cpu_seconds();
    auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(300ms);
    auto wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto used = cpu_seconds() - cpu0;
    EXPECT_LT(used, 0.1 * wall) << (where.on_pool() ? "pool" : "threads") << ": " << used << " s CPU in " << wall
                                << " s idle";
    g.close();
    g.wait();
  }
}

namespace {
// Emits 0 .. n-1 at `rate` elements per second, pausing while ahead.
struct paced_source : st::node<void, std::int64_t> {
  std::int64_t i = 0, n = 0;
  double rate = 1;
  std::uint64_t start = 0;
  bool produce() {
    if (i == n) return false;
    const auto now = st::now();
    if (start == 0) start = now;
    const auto due = start + static_cast<std::uint64_t>(static_cast<double>(i) * 1e9 / rate);
    if (now < due) {
      pause_until(due);
      return true;
    }
    send_next(std::int64_t{i++});
    return true;
  }
};
}  // namespace

TEST(stream_idle, a_paced_source_keeps_its_pace_and_sleeps_between_elements) {
  for (const auto& where : {troupe::placement::pool(), troupe::placement::own_thread()}) {
    SCOPED_TRACE(where.on_pool() ? "pool" : "threads");
    troupe::actor_system sys{troupe::config{.workers = 2, .polling = troupe::polling::moderate}};
    paced_source src;
    src.n = 100;
    src.rate = 500;  // 100 elements: at least 0.198 s
    std::vector<std::int64_t> got;
    st::options o;
    o.placement = where;
    const auto cpu0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    auto g = troupe::spawn_pattern(sys, troupe::pipeline{src, st::sink([&](std::int64_t x) { got.push_back(x); })}, o);
    g.wait();
    const auto wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto used = cpu_seconds() - cpu0;
    ASSERT_EQ(got.size(), 100u);
    for (std::int64_t i = 0; i < 100; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], i);
    EXPECT_GE(wall, 0.198);
    // Between elements the source waits on a timer (pool) or sleeps (thread).
    EXPECT_LT(used, 0.5 * wall) << used << " s CPU in " << wall << " s";
  }
}

TEST(stream_actors, dropping_every_handle_ends_the_input) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  std::atomic<int> got{0};
  {
    st::options o;
    o.notify = self->self();
    auto g = troupe::spawn_pattern(sys, troupe::pipeline{st::sink([&](int) { ++got; })}, o);
    for (int i = 0; i < 100; ++i) sys.send(g, i);
  }
  bool notified = false;
  self->receive([&](st::completed& c) {
    notified = true;
    EXPECT_FALSE(c.error);
  });
  EXPECT_TRUE(notified);
  EXPECT_EQ(got.load(), 100);
}

TEST(stream_actors, shutdown_drains_a_graph_whose_entry_an_ended_actor_still_holds) {
  st::graph g;
  {
    troupe::actor_system sys{troupe::config{.workers = 2}};
    g = troupe::spawn_pattern(sys, troupe::farm{troupe::seq{[](std::int64_t x) { return x * x; }}, 3});
    troupe::scoped_actor self{sys};
    auto me = self.handle();
    // The client keeps a copy of the handle in its function object (and a
    // request timer keeps the client): the entry is only ended by shutdown.
    sys.spawn([g, me](troupe::event_actor& s) {
      s.request(g, 30s, std::int64_t{3}).then([&s, me](std::int64_t v) { s.send(me, v); });
      return troupe::behavior{};
    });
    self->receive([](std::int64_t v) { EXPECT_EQ(v, 9); });
  }
  EXPECT_TRUE(g.done());
  EXPECT_FALSE(g.cancelled());  // ended by its input closing when the entry ended
}

TEST(stream_actors, shutdown_cancels_an_endless_graph_after_the_drain_time) {
  st::graph g;
  std::atomic<std::int64_t> seen{0};
  {
    troupe::actor_system sys{troupe::config{.workers = 2}};
    g = troupe::spawn_pattern(sys, troupe::pipeline{st::source([]() -> std::optional<int> { return 1; }),
                                                    st::sink([&](int) { seen.fetch_add(1); })});
    while (seen.load() == 0) std::this_thread::sleep_for(1ms);
  }  // would hang if the system waited for the endless source
  EXPECT_TRUE(g.done());
  EXPECT_TRUE(g.cancelled());
}

TEST(stream_actors, system_shutdown_with_an_unfinished_graph_does_not_hang) {
  std::atomic<int> got{0};
  {
    troupe::actor_system sys{troupe::config{.workers = 2}};
    auto g =
        troupe::spawn_pattern(sys, troupe::pipeline{st::map([](int x) { return x; }), st::sink([&](int) { ++got; })});
    for (int i = 0; i < 100; ++i) sys.send(g, i);
    while (got.load() < 100) std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(got.load(), 100);
}

namespace {
// Sends its input on in batches of up to 100, and what it holds when its
// input runs dry (on_idle).
struct batcher : st::node<std::int64_t, std::int64_t> {
  std::vector<std::int64_t> held;
  void consume(std::int64_t& x) {
    held.push_back(x);
    if (held.size() == 100) flush();
  }
  void on_idle() { flush(); }
  void on_stop() { flush(); }
  void flush() {
    for (auto v : held) send_next(v);
    held.clear();
  }
};
// Sends element i only after the sink has seen element i - 1: a node that
// held a partial batch until it filled would stall it for good.
struct lockstep_source : st::node<void, std::int64_t> {
  std::atomic<std::int64_t>* seen;
  std::int64_t n;
  std::int64_t next = 0;
  bool produce() {
    if (next == n) return false;
    if (seen->load() < next) {
      pause_until(st::now() + 50'000);
      return true;
    }
    send_next(next++);
    return true;
  }
};
}  // namespace

TEST_P(stream_placement, on_idle_lets_a_batching_node_send_what_it_holds) {
  troupe::actor_system sys{cfg()};
  std::atomic<std::int64_t> seen{0};
  std::vector<std::int64_t> got;
  constexpr std::int64_t n = 300;
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{lockstep_source{{}, &seen, n}, batcher{}, st::sink([&](std::int64_t x) {
                              got.push_back(x);
                              seen.store(x + 1);
                            })},
      opts());
  g.wait();
  ASSERT_EQ(static_cast<std::int64_t>(got.size()), n);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], i);
}

TEST_P(stream_placement, on_idle_reaches_nodes_inside_a_chain) {
  troupe::actor_system sys{cfg()};
  std::atomic<std::int64_t> seen{0};
  std::int64_t count = 0;
  constexpr std::int64_t n = 200;
  auto g = troupe::spawn_pattern(sys,
                                 troupe::pipeline{lockstep_source{{}, &seen, n},
                                                  troupe::chain{st::map([](std::int64_t x) { return x; }), batcher{}},
                                                  st::sink([&](std::int64_t x) {
                                                    ++count;
                                                    seen.store(x + 1);
                                                  })},
                                 opts());
  g.wait();
  EXPECT_EQ(count, n);
}
