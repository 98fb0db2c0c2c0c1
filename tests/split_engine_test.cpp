// Graphs split across "processes" on the one engine, without a network:
// each rank is the part of the same description that one call of
// ext::spawn_split runs, and the ranks find each other's inlets in a
// directory shared in this process (local_peers). The edges between ranks
// are the same runners and messages as across processes (troupe::net adds
// only the wire: tests/net_channel_test.cpp runs these over ZeroMQ).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "local_peers.hpp"
#include "timed_windows.hpp"
#include "troupe/ext/edges.hpp"
#include "troupe/troupe.hpp"

namespace {

namespace st = troupe::stream;
using namespace std::chrono_literals;

using troupe_test::directory;
using troupe_test::local_peers;
using troupe_test::ranks;

void wait_all(const std::vector<st::graph>& gs) {
  for (auto& g : gs) g.wait();
}
/// Whether g ends within d (with or without an error).
bool ends_within(const st::graph& g, std::chrono::milliseconds d) {
  try {
    return g.wait_for(d);
  } catch (...) {
    return true;
  }
}

struct counting_source : st::node<void, std::int64_t> {
  std::int64_t n = 0, next = 0;
  bool produce() {
    if (next == n) return false;
    send_next(next++);
    return true;
  }
};

struct doubler : st::node<std::int64_t, std::int64_t> {
  void consume(std::int64_t& x) { send_next(x * 2); }
};

/// Sums what reaches it (shared by its replicas through the pointer).
struct total {
  std::atomic<std::int64_t> sum{0}, count{0};
  std::mutex mtx;
  std::vector<std::int64_t> order;
};
struct summing_sink : st::node<std::int64_t, void> {
  total* t = nullptr;
  bool keep_order = false;
  void consume(std::int64_t& x) {
    t->sum.fetch_add(x);
    t->count.fetch_add(1);
    if (keep_order) {
      std::lock_guard<std::mutex> lock{t->mtx};
      t->order.push_back(x);
    }
  }
};

TEST(split_engine, a_pipeline_across_two_ranks_delivers_everything_in_order) {
  ranks rs{2};
  total t;
  counting_source src;
  src.n = 100'000;
  summing_sink snk;
  snk.t = &t;
  snk.keep_order = true;
  auto p = troupe::pipeline{src, troupe::placed{doubler{}, troupe::placement::rank(1)}, snk};
  wait_all(rs.spawn(p));
  EXPECT_EQ(t.count.load(), 100'000);
  ASSERT_EQ(t.order.size(), 100'000U);
  for (std::int64_t i = 0; i < 100'000; ++i) ASSERT_EQ(t.order[static_cast<std::size_t>(i)], 2 * i);
}

TEST(split_engine, farms_whose_replicas_span_ranks_count_exactly) {
  ranks rs{3};
  total t;
  counting_source src;
  src.n = 200'000;
  summing_sink snk;
  snk.t = &t;
  auto p = troupe::pipeline{src, troupe::placed{troupe::farm{doubler{}, 4}, troupe::placement::ranks("0,1,2")},
                            troupe::placed{troupe::farm{snk, 3}, troupe::placement::ranks("2,1")}};
  auto gs = rs.spawn(p, {.batch = 256, .max_delay = 1000us, .window = 1024});
  wait_all(gs);
  EXPECT_EQ(t.count.load(), 200'000);
  EXPECT_EQ(t.sum.load(), 200'000LL * 199'999);
  for (auto& g : gs) EXPECT_FALSE(g.error());
}

/// A value, the replica that handled it, and a punctuation number (0: data).
struct item {
  std::uint64_t v = 0;
  std::uint32_t replica = 0;
  std::uint32_t marker = 0;
};

/// 0 .. n-1, with a punctuation to every replica (send_all) after every
/// `every` values.
struct numbers : st::node<void, item> {
  std::uint64_t n = 0, every = 0, i = 0;
  std::uint32_t markers = 0;
  bool produce() {
    if (i == n) return false;
    send_next(item{i++, 0, 0});
    if (every != 0 && i % every == 0) send_all(item{i, 0, ++markers});
    return true;
  }
};
struct tag_replica : st::node<item, item> {
  void consume(item& v) {
    v.replica = static_cast<std::uint32_t>(replica_index());
    send_next(std::move(v));
  }
};
/// Takes a little longer for some values, so that replicas overtake each other.
struct uneven : st::node<item, item> {
  void consume(item& v) {
    if (v.v % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds{20});
    v.replica = static_cast<std::uint32_t>(replica_index());
    send_next(std::move(v));
  }
};
struct items_seen {
  std::mutex mtx;
  std::vector<item> all;
};
struct collect : st::node<item, void> {
  items_seen* to = nullptr;
  void consume(item& v) {
    std::lock_guard<std::mutex> lock{to->mtx};
    to->all.push_back(v);
  }
};

TEST(split_engine, an_ordered_farm_whose_replicas_span_ranks_keeps_the_input_order) {
  ranks rs{2};
  items_seen out;
  numbers src;
  src.n = 20'000;
  collect snk;
  snk.to = &out;
  auto p = troupe::pipeline{src,
                            troupe::placed{troupe::farm{uneven{}, 4, troupe::round_robin{}, troupe::ordered},
                                           troupe::placement::ranks("1,0")},
                            snk};
  auto gs = rs.spawn(p, {.batch = 64, .max_delay = 200us, .window = 512});
  wait_all(gs);
  ASSERT_EQ(out.all.size(), 20'000U);
  std::set<std::uint32_t> replicas;
  for (std::size_t i = 0; i < out.all.size(); ++i) {
    ASSERT_EQ(out.all[i].v, i) << "out of order at " << i;
    replicas.insert(out.all[i].replica);
  }
  EXPECT_EQ(replicas.size(), 4U);
  // The sequencer and the reorder stage run on the farm's first rank.
  for (auto& n : gs[1].metrics().nodes) EXPECT_EQ(n.rank, 1U);
}

TEST(split_engine, punctuations_reach_every_replica_on_every_rank_in_order) {
  ranks rs{2};
  items_seen out;
  numbers src;
  src.n = 10'000;
  src.every = 1000;
  collect snk;
  snk.to = &out;
  auto p = troupe::pipeline{src, troupe::placed{troupe::farm{tag_replica{}, 3}, troupe::placement::ranks("0,1")},
                            troupe::placed{snk, troupe::placement::rank(1)}};
  wait_all(rs.spawn(p, {.batch = 100, .max_delay = 500us, .window = 1000}));
  std::map<std::uint32_t, std::vector<item>> by_replica;
  std::size_t data = 0;
  for (auto& v : out.all) {
    by_replica[v.replica].push_back(v);
    if (v.marker == 0) ++data;
  }
  EXPECT_EQ(data, 10'000U);
  ASSERT_EQ(by_replica.size(), 3U);
  for (auto& [r, vs] : by_replica) {
    // Each replica sees every punctuation once, after the values before it.
    std::uint32_t next_marker = 1;
    std::uint64_t last = 0;
    for (auto& v : vs) {
      if (v.marker == 0) {
        EXPECT_GE(v.v, last) << "replica " << r;
        last = v.v;
        continue;
      }
      EXPECT_EQ(v.marker, next_marker++) << "replica " << r;
      EXPECT_LE(last, v.v) << "replica " << r << ": a value after the punctuation came before it";
    }
    EXPECT_EQ(next_marker, 11U) << "replica " << r;
  }
}

TEST(split_engine, branches_span_ranks_and_every_branch_gets_every_element) {
  ranks rs{2};
  total t;
  counting_source src;
  src.n = 30'000;
  summing_sink snk;
  snk.t = &t;
  auto p = troupe::pipeline{src,
                            troupe::branches{troupe::placed{doubler{}, troupe::placement::rank(1)},
                                             troupe::placed{troupe::farm{doubler{}, 2, troupe::broadcast{}},
                                                            troupe::placement::ranks("0,1")}},
                            snk};
  wait_all(rs.spawn(p));
  EXPECT_EQ(t.count.load(), 3 * 30'000);
  EXPECT_EQ(t.sum.load(), 3 * 30'000LL * 29'999);
}

/// Throws on value `bad` (skip: that element is dropped).
struct fragile : st::node<std::int64_t, std::int64_t> {
  std::int64_t bad = -1;
  void consume(std::int64_t& x) {
    if (x == bad) throw std::runtime_error("fragile: " + std::to_string(x));
    send_next(std::move(x));
  }
};

TEST(split_engine, a_failing_replica_ends_every_rank_with_an_error) {
  ranks rs{2};
  total t;
  counting_source src;
  src.n = 1'000'000;
  fragile f;
  f.bad = 5'000;
  summing_sink snk;
  snk.t = &t;
  auto p = troupe::pipeline{src, troupe::placed{f, troupe::placement::rank(1)}, snk};
  auto gs = rs.spawn(p);
  EXPECT_THROW(gs[1].wait(), std::runtime_error);
  EXPECT_NE(gs[1].error().message().find("fragile: 5000"), std::string::npos) << gs[1].error().to_string();
  EXPECT_THROW(gs[0].wait(), st::edge_error);
  EXPECT_EQ(gs[0].error().code(), troupe::errc::edge_lost);
  EXPECT_NE(gs[0].error().message().find("rank 1"), std::string::npos) << gs[0].error().to_string();
  EXPECT_LT(t.count.load(), 1'000'000);
}

TEST(split_engine, under_skip_an_element_failure_is_skipped_on_any_rank) {
  ranks rs{2};
  total t;
  counting_source src;
  src.n = 50'000;
  fragile f;
  f.bad = 777;
  summing_sink snk;
  snk.t = &t;
  st::options o;
  o.on_error = st::failure::skip;
  auto p = troupe::pipeline{src, troupe::placed{f, troupe::placement::rank(1)}, snk};
  auto gs = rs.spawn(p, {}, o);
  wait_all(gs);
  EXPECT_EQ(t.count.load(), 50'000 - 1);
  EXPECT_EQ(gs[1].failed(), 1U);
  EXPECT_FALSE(gs[0].error());
}

/// Never ends on its own (a source for cancellation).
struct endless : st::node<void, std::int64_t> {
  std::int64_t i = 0;
  bool produce() {
    send_next(i++);
    return true;
  }
};

TEST(split_engine, a_lost_peer_under_skip_still_ends_the_graph_with_an_error_naming_it) {
  ranks rs{2};
  total t;
  summing_sink snk;
  snk.t = &t;
  st::options o;
  o.on_error = st::failure::skip;
  auto p = troupe::pipeline{endless{}, troupe::placed{doubler{}, troupe::placement::rank(1)}, snk};
  auto gs = rs.spawn(p, {}, o);
  while (t.count.load() < 10'000) std::this_thread::sleep_for(1ms);
  gs[1].cancel();  // rank 1 goes away mid-stream
  EXPECT_TRUE(ends_within(gs[1], 10s));
  ASSERT_TRUE(ends_within(gs[0], 10s)) << "rank 0 hangs after losing rank 1";
  EXPECT_EQ(gs[0].error().code(), troupe::errc::edge_lost);
  EXPECT_NE(gs[0].error().message().find("rank 1"), std::string::npos) << gs[0].error().to_string();
}

TEST(split_engine, cancel_on_one_rank_ends_the_others_with_an_error) {
  ranks rs{3};
  total t;
  summing_sink snk;
  snk.t = &t;
  auto p =
      troupe::pipeline{endless{}, troupe::placed{troupe::farm{doubler{}, 2}, troupe::placement::ranks("1,2")}, snk};
  auto gs = rs.spawn(p);
  while (t.count.load() < 10'000) std::this_thread::sleep_for(1ms);
  gs[0].cancel();
  for (std::size_t r = 0; r < 3; ++r) ASSERT_TRUE(ends_within(gs[r], 10s)) << "rank " << r << " hangs";
  EXPECT_TRUE(gs[0].cancelled());
  for (std::size_t r = 1; r < 3; ++r) EXPECT_TRUE(gs[r].error()) << "rank " << r;
}

TEST(split_engine, every_rank_reports_the_metrics_of_its_part) {
  ranks rs{2};
  total t;
  counting_source src;
  src.n = 10'000;
  summing_sink snk;
  snk.t = &t;
  auto p = troupe::pipeline{src, troupe::placed{troupe::farm{doubler{}, 4}, troupe::placement::ranks("0,1")},
                            troupe::placed{snk, troupe::placement::rank(1)}};
  auto gs = rs.spawn(p);
  wait_all(gs);
  std::uint64_t doubled = 0;
  std::set<std::size_t> replicas;
  for (std::size_t r = 0; r < 2; ++r) {
    for (auto& n : gs[r].metrics().nodes) {
      EXPECT_EQ(n.rank, r);
      if (n.name.find("doubler") == std::string::npos) continue;
      EXPECT_EQ(n.stage, 1U);
      EXPECT_EQ(n.replica % 2, r) << "replica " << n.replica << " ran on the wrong rank";
      doubled += n.items_in;
      replicas.insert(n.replica);
    }
  }
  EXPECT_EQ(doubled, 10'000U);
  EXPECT_EQ(replicas.size(), 4U);
  // Rank 1 runs the sink: only its part measures the latency... and counts it all.
  const auto m1 = gs[1].metrics();
  EXPECT_NE(m1.to_json().find("\"rank\":1"), std::string::npos);
}

TEST(split_engine, a_placement_outside_the_peers_and_edges_without_a_window_are_refused) {
  ranks rs{2};
  counting_source src;
  src.n = 10;
  total t;
  summing_sink snk;
  snk.t = &t;
  auto p = troupe::pipeline{src, troupe::placed{doubler{}, troupe::placement::rank(2)}, snk};
  EXPECT_THROW(troupe::ext::spawn_split(*rs.systems[0], p, *rs.peers[0], "g", {}), std::invalid_argument);
  EXPECT_THROW(troupe::placement::ranks("0,,1"), std::invalid_argument);
  EXPECT_THROW(troupe::placement::ranks("0;1"), std::invalid_argument);
  EXPECT_THROW(troupe::placement::ranks(std::vector<std::size_t>{}), std::invalid_argument);
  // Neither a window nor its size in bytes, or a window below a batch: the
  // edges are checked first, and the error names them.
  for (const auto& bad : {troupe::ext::edge_config{.window = 0, .window_bytes = 0},
                          troupe::ext::edge_config{.batch = 64, .window = 32}}) {
    try {
      troupe::ext::spawn_split(*rs.systems[0], p, *rs.peers[0], "g", bad);
      ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string{e.what()}.find("window"), std::string::npos) << e.what();
    }
  }
}

TEST(split_engine, the_window_is_in_bytes_of_the_element_unless_given_in_elements) {
  const troupe::ext::edge_config dflt{};
  using tuple24 = std::array<char, 24>;
  using tuple192 = std::array<char, 192>;
  using huge = std::array<char, 65'536>;
  EXPECT_EQ(dflt.window_of<tuple24>(), 262'144U);
  EXPECT_EQ(dflt.window_of<tuple192>(), 32'768U);
  EXPECT_EQ(dflt.window_of<huge>(), 4 * dflt.batch);  // at least 4 batches
  EXPECT_EQ((troupe::ext::edge_config{.batch = 16, .window = 100}.window_of<char>()), 100U);
}

TEST(split_engine, a_missing_rank_is_reported_after_the_connect_timeout) {
  auto dir = std::make_shared<directory>();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  local_peers alone{dir, 0, 2, 200ms};
  counting_source src;
  src.n = 10;
  total t;
  summing_sink snk;
  snk.t = &t;
  auto p = troupe::pipeline{src, troupe::placed{snk, troupe::placement::rank(1)}};
  try {
    troupe::ext::spawn_split(sys, p, alone, "g", {});
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string{e.what()}.find("rank 1"), std::string::npos) << e.what();
  }
}

TEST(split_engine, a_slow_consumer_holds_its_producer_back_within_the_window) {
  ranks rs{2};
  std::atomic<std::int64_t> produced{0}, consumed{0}, most_ahead{0};
  struct counted : st::node<void, std::int64_t> {
    std::atomic<std::int64_t>* produced = nullptr;
    std::int64_t i = 0;
    bool produce() {
      if (i == 20'000) return false;
      send_next(i++);
      produced->fetch_add(1);
      return true;
    }
  };
  struct slow : st::node<std::int64_t, void> {
    std::atomic<std::int64_t>* produced = nullptr;
    std::atomic<std::int64_t>* consumed = nullptr;
    std::atomic<std::int64_t>* most_ahead = nullptr;
    void consume(std::int64_t&) {
      const auto ahead = produced->load() - consumed->fetch_add(1);
      if (ahead > most_ahead->load()) most_ahead->store(ahead);
      if (consumed->load() % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds{100});
    }
  };
  counted src;
  src.produced = &produced;
  slow snk;
  snk.produced = &produced;
  snk.consumed = &consumed;
  snk.most_ahead = &most_ahead;
  st::options o;
  o.capacity = 64;
  auto p = troupe::pipeline{src, troupe::placed{snk, troupe::placement::rank(1)}};
  wait_all(rs.spawn(p, {.batch = 128, .max_delay = 1000us, .window = 512}, o));
  EXPECT_EQ(consumed.load(), 20'000);
  // Channels of 64 on both sides, a window of 512 and a batch being filled.
  EXPECT_LE(most_ahead.load(), 64 + 128 + 512 + 64 + 64);
}

TEST(split_engine, watermarks_cross_ranks_and_close_event_time_windows) {
  ranks rs{2};
  auto log = std::make_shared<troupe_test::timed_log>();
  // The sink runs on rank 0 with the source; the windows' replicas on both.
  wait_all(rs.spawn(troupe_test::timed_windows(log, troupe::placement::ranks("1,0")),
                    {.batch = 16, .max_delay = 200us, .window = 64}));
  EXPECT_EQ(log->gave_up.load(), 0) << "the watermark did not close the windows on the other rank";
  EXPECT_EQ(log->sorted(), troupe_test::timed_windows_want());
  ASSERT_FALSE(log->marks.empty());
  EXPECT_TRUE(std::is_sorted(log->marks.begin(), log->marks.end()));
  EXPECT_GE(log->marks.back(), 10U);
}

}  // namespace
