// troupe::chain: nodes fused into one stage (direct calls, no channel).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "placements.hpp"
#include "troupe/troupe.hpp"

namespace st = troupe::stream;
using namespace std::chrono_literals;
using troupe_test::counting_source;

namespace {

using chain_placement = troupe_test::placed_test;

// What happened, in order, across the nodes of one chain replica.
struct journal {
  std::mutex mtx;
  std::vector<std::string> events;
  void add(std::string e) {
    std::lock_guard<std::mutex> g{mtx};
    events.push_back(std::move(e));
  }
};

// Holds every element back and sends them all from on_stop.
struct hold_until_stop : st::node<std::int64_t, std::int64_t> {
  std::shared_ptr<journal> log;
  std::vector<std::int64_t> held;
  void on_start() { log->add("hold start"); }
  void consume(std::int64_t& x) { held.push_back(x); }
  void on_stop() {
    log->add("hold stop");
    for (auto v : held) send_next(v);
  }
};

// Counts what reaches it, and notes when it starts and stops.
struct counting_sink : st::node<std::int64_t, void> {
  std::shared_ptr<journal> log;
  std::shared_ptr<std::atomic<std::int64_t>> got;
  std::int64_t mine = 0;
  void on_start() { log->add("sink start"); }
  void consume(std::int64_t&) { ++mine; }
  void on_stop() {
    log->add("sink stop after " + std::to_string(mine));
    got->fetch_add(mine);
  }
};

}  // namespace

TEST_P(chain_placement, a_chain_in_a_pipeline_keeps_every_element_in_order) {
  troupe::actor_system sys{cfg()};
  std::vector<std::int64_t> got;
  constexpr std::int64_t n = 50'000;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{counting_source(n),
                       troupe::chain{st::filter([](const std::int64_t& x) { return x % 3 != 0; }),
                                     st::flat_map<std::int64_t>([](std::int64_t& x, st::emitter<std::int64_t>& out) {
                                       out.send_next(x);
                                       out.send_next(-x);
                                     }),
                                     st::map([](std::int64_t x) { return 2 * x; })},
                       st::sink([&](std::int64_t x) { got.push_back(x); })},
      opts());
  g.wait();
  std::vector<std::int64_t> want;
  for (std::int64_t i = 0; i < n; ++i)
    if (i % 3 != 0) {
      want.push_back(2 * i);
      want.push_back(-2 * i);
    }
  EXPECT_EQ(got, want);
}

TEST_P(chain_placement, chains_may_start_with_a_source_and_end_with_a_sink_in_a_keyed_farm) {
  troupe::actor_system sys{cfg()};
  constexpr std::int64_t n = 30'000;
  auto ids = std::make_shared<std::atomic<int>>(0);
  auto mtx = std::make_shared<std::mutex>();
  auto seen = std::make_shared<std::map<std::int64_t, std::set<int>>>();
  auto total = std::make_shared<std::atomic<std::int64_t>>(0);
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{troupe::chain{counting_source(n), st::map([](std::int64_t x) { return x * 7; })},
                       troupe::farm{troupe::chain{st::map([](std::int64_t x) { return x / 7; }),
                                                  st::sink([ids, mtx, seen, total, id = -1](std::int64_t x) mutable {
                                                    if (id < 0) id = ids->fetch_add(1);
                                                    total->fetch_add(1);
                                                    std::lock_guard<std::mutex> lock{*mtx};
                                                    (*seen)[x % 10].insert(id);
                                                  })},
                                    3, troupe::by_key{[](const std::int64_t& x) { return (x / 7) % 10; }}}},
      opts());
  g.wait();
  EXPECT_EQ(total->load(), n);
  ASSERT_EQ(seen->size(), 10u);
  for (auto& [key, replicas] : *seen) EXPECT_EQ(replicas.size(), 1u) << "key " << key;
}

TEST_P(chain_placement, nodes_start_last_first_and_stop_first_first) {
  troupe::actor_system sys{cfg()};
  auto log = std::make_shared<journal>();
  auto got = std::make_shared<std::atomic<std::int64_t>>(0);
  constexpr std::int64_t n = 5'000;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{counting_source(n), troupe::chain{hold_until_stop{{}, log, {}}, counting_sink{{}, log, got}}},
      opts());
  g.wait();
  EXPECT_EQ(got->load(), n);  // what hold_until_stop sent from on_stop reached the sink before it stopped
  std::vector<std::string> want{"sink start", "hold start", "hold stop", "sink stop after " + std::to_string(n)};
  EXPECT_EQ(log->events, want);
}

TEST_P(chain_placement, every_replica_of_a_chained_farm_knows_its_index) {
  troupe::actor_system sys{cfg()};
  auto mtx = std::make_shared<std::mutex>();
  auto indices = std::make_shared<std::set<std::size_t>>();
  struct note_index : st::node<std::int64_t, void> {
    std::shared_ptr<std::mutex> mtx;
    std::shared_ptr<std::set<std::size_t>> indices;
    void on_start() {
      std::lock_guard<std::mutex> g{*mtx};
      indices->insert(replica_index());
      EXPECT_EQ(replica_count(), 4u);
    }
    void consume(std::int64_t&) {}
  };
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{
          counting_source(100),
          troupe::farm{troupe::chain{st::map([](std::int64_t x) { return x; }), note_index{{}, mtx, indices}}, 4}},
      opts());
  g.wait();
  EXPECT_EQ(*indices, (std::set<std::size_t>{0, 1, 2, 3}));
}

INSTANTIATE_TEST_SUITE_P(placements, chain_placement, troupe_test::every_placement(), troupe_test::placement_name);

TEST(chain, a_chain_answers_requests_through_its_entry) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto g = troupe::spawn_pattern(sys, troupe::chain{troupe::seq{[](int x) { return x + 1; }},
                                                    troupe::seq{[](int x) { return std::to_string(x * 10); }}});
  troupe::scoped_actor self{sys};
  for (int i = 0; i < 100; ++i)
    self->request(g, 10s, i).receive([&](std::string& s) { EXPECT_EQ(s, std::to_string((i + 1) * 10)); },
                                     [](troupe::error& e) { FAIL() << e.to_string(); });
}

TEST(chain, a_failing_chained_node_skips_its_element) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  st::options o;
  o.on_error = st::failure::skip;
  std::atomic<std::int64_t> got{0};
  constexpr std::int64_t n = 1'000;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{counting_source(n),
                       troupe::chain{st::map([](std::int64_t x) { return x; }), st::map([](std::int64_t x) {
                                       if (x % 10 == 0) throw std::runtime_error{"tenth"};
                                       return x;
                                     })},
                       st::sink([&](std::int64_t) { got.fetch_add(1); })},
      o);
  g.wait();
  EXPECT_EQ(got.load(), n - n / 10);
}

TEST(chain, watermarks_reach_every_chained_node_after_what_came_before) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  struct wm_note : st::node<std::int64_t, std::int64_t> {
    std::shared_ptr<std::vector<std::uint64_t>> marks;
    std::shared_ptr<std::int64_t> last_seen;
    void consume(std::int64_t& x) {
      *last_seen = x;
      send_next(x);
    }
    void on_watermark(std::uint64_t w) {
      EXPECT_EQ(w, watermark());
      EXPECT_TRUE(event_time());
      // Every element up to the watermark's time has passed this node.
      EXPECT_GE(static_cast<std::uint64_t>(*last_seen), w);
      marks->push_back(w);
    }
  };
  auto first = std::make_shared<std::vector<std::uint64_t>>();
  auto second = std::make_shared<std::vector<std::uint64_t>>();
  auto s1 = std::make_shared<std::int64_t>(-1), s2 = std::make_shared<std::int64_t>(-1);
  constexpr std::int64_t n = 20'000;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{st::with_watermarks(counting_source(n), [](const std::int64_t& x) { return x; },
                                           {.out_of_orderness = 0, .every = 100}),
                       troupe::chain{wm_note{{}, first, s1}, wm_note{{}, second, s2}}, st::sink([](std::int64_t) {})});
  g.wait();
  ASSERT_FALSE(first->empty());
  EXPECT_EQ(*first, *second);
  for (std::size_t i = 1; i < first->size(); ++i) EXPECT_LT((*first)[i - 1], (*first)[i]);
}

TEST(chain, a_chained_source_may_pace_itself) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  struct paced : st::node<void, std::int64_t> {
    std::int64_t i = 0;
    bool produce() {
      if (i == 200) return false;
      send_next(i++);
      if (i % 50 == 0) pause_until(st::now() + 200'000);  // 0.2 ms
      return true;
    }
  };
  std::atomic<std::int64_t> got{0};
  auto g =
      troupe::spawn_pattern(sys, troupe::pipeline{troupe::chain{paced{}, st::map([](std::int64_t x) { return x + 1; })},
                                                  st::sink([&](std::int64_t) { got.fetch_add(1); })});
  g.wait();
  EXPECT_EQ(got.load(), 200);
}

TEST(chain, a_copy_feeds_its_own_nodes) {
  // Each replica is a copy of the prototype: its links must lead to its own
  // nodes, not to the prototype's.
  struct tally : st::node<std::int64_t, void> {
    std::int64_t n = 0;
    void consume(std::int64_t&) { ++n; }
  };
  troupe::chain proto{st::map([](std::int64_t x) { return x; }), tally{}};
  auto copy = proto;
  std::int64_t v = 1;
  copy.consume(v);
  copy.consume(v);
  EXPECT_EQ(copy.get<1>().n, 2);
  EXPECT_EQ(proto.get<1>().n, 0);
}

TEST(chain, a_chain_from_source_to_sink_is_a_whole_graph) {
  for (std::size_t workers : {1, 2}) {
    troupe::actor_system sys{troupe::config{.workers = workers}};
    std::int64_t sum = 0, count = 0;
    constexpr std::int64_t n = 10'000;
    auto g = troupe::spawn_pattern(sys, troupe::chain{counting_source(n), st::map([](std::int64_t x) { return 3 * x; }),
                                                      st::sink([&](std::int64_t x) {
                                                        sum += x;
                                                        ++count;
                                                      })});
    g.wait();
    EXPECT_EQ(count, n);
    EXPECT_EQ(sum, 3 * n * (n - 1) / 2);
  }
}
