// Split graphs over the network (troupe::net): exact counts across ranks,
// every farm policy applied across ranks, end of stream, punctuations in
// order, an ordered farm spanning ranks, credit bounding a slow consumer,
// failures ending every part with an error. Two ranks run in this one
// process (two actor systems, two nodes on loopback), so that the sanitizers
// see both sides; net_process_test.cpp runs ranks as processes, and
// split_engine_test.cpp the same engine without a network.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "troupe/net/split.hpp"

using namespace std::chrono_literals;
namespace net = troupe::net;
namespace st = troupe::stream;

namespace {

struct tagged_value {
  std::uint64_t value = 0;
  std::uint32_t replica = 0;
  std::uint32_t marker = 0;  // 0: an element; k: the k-th punctuation
  auto fields() { return std::tie(value, replica, marker); }
};

void register_types() {
  static const bool once = [] {
    net::add_type<tagged_value>("test.tagged_value");
    return true;
  }();
  (void)once;
}

net::node_config plain(const char* name) {
  net::node_config c;
  c.security = net::security::plaintext;
  c.name = name;
  // No test here is about liveness: under a sanitizer, two ranks and a
  // flood of batches on 2 cores once kept a heartbeat away for the default
  // 600 ms, and a failure test saw a lost peer instead of its error.
  c.heartbeat_interval = 500ms;
  c.heartbeat_timeout = 5s;
  return c;
}

/// Two ranks in this process, each with its actor system, node and cluster.
struct duo {
  troupe::actor_system sys0{troupe::config{.workers = 2}};
  troupe::actor_system sys1{troupe::config{.workers = 2}};
  net::node node0{sys0, plain("rank0")};
  net::node node1{sys1, plain("rank1")};
  std::optional<net::cluster> c0, c1;
  explicit duo(std::chrono::milliseconds connect = 10s) {
    register_types();
    const net::remote_address any{"tcp://127.0.0.1:*", ""};
    c0.emplace(sys0, node0, net::cluster_config{.rank = 0, .peers = {any, any}, .connect_timeout = connect});
    c1.emplace(sys1, node1, net::cluster_config{.rank = 1, .peers = {any, any}, .connect_timeout = connect});
    c0->set_peer(1, c1->self_address());
    c1->set_peer(0, c0->self_address());
  }
  net::cluster& operator[](std::size_t r) { return r == 0 ? *c0 : *c1; }
};

/// Numbers 0 .. n-1, with a punctuation (marker k, sent to every replica
/// with send_all) after every `every` numbers.
struct numbers : st::node<void, tagged_value> {
  static constexpr const char* kind = "source";
  std::uint64_t n = 0, every = 0, i = 0;
  std::uint32_t markers = 0;
  bool produce() {
    if (i == n) return false;
    send_next(tagged_value{i++, 0, 0});
    if (every != 0 && i % every == 0) send_all(tagged_value{i, 0, ++markers});
    return true;
  }
};

/// Tags each element with the replica that handled it.
struct tag_replica : st::node<tagged_value, tagged_value> {
  void consume(tagged_value& v) {
    v.replica = static_cast<std::uint32_t>(replica_index());
    send_next(std::move(v));
  }
};

/// What the sink saw (shared by its replicas).
struct seen {
  std::mutex mtx;
  std::vector<tagged_value> all;
};
struct collect : st::node<tagged_value, void> {
  static constexpr const char* kind = "sink";
  std::shared_ptr<seen> out;
  std::vector<tagged_value> mine;
  void consume(const tagged_value& v) { mine.push_back(v); }
  void on_stop() {
    std::lock_guard<std::mutex> g{out->mtx};
    out->all.insert(out->all.end(), mine.begin(), mine.end());
  }
};

/// Both ranks' parts of `p`, split from a thread each (a rank's split()
/// blocks until it finds the other's inlets).
template <class P>
std::pair<st::graph, st::graph> split_both(duo& d, const P& p, const std::vector<troupe::placement>& where,
                                           net::split_options o = {}) {
  auto g1 = std::async(std::launch::async, [&] { return net::split(d[1], p, where, o); });
  auto g0 = net::split(d[0], p, where, o);
  return {std::move(g0), g1.get()};
}

template <class P>
void run_both(duo& d, const P& p, const std::vector<troupe::placement>& where, net::split_options o = {}) {
  auto [g0, g1] = split_both(d, p, where, o);
  g0.wait();
  g1.wait();
}

/// Runs `p` on both ranks and expects each part to end with an error that
/// says `what` (a failure reaches every part), not to hang.
template <class P>
void expect_both_fail(duo& d, const P& p, const std::vector<troupe::placement>& where, const std::string& what) {
  auto [g0, g1] = split_both(d, p, where);
  for (auto* g : {&g0, &g1}) {
    try {
      g->wait();
      ADD_FAILURE() << "a part ended without an error";
    } catch (const std::exception& e) {
      if (!what.empty()) {
        EXPECT_NE(std::string{e.what()}.find(what), std::string::npos) << e.what();
      }
    }
  }
}

std::uint64_t elements(const std::vector<tagged_value>& v) {
  std::uint64_t n = 0;
  for (auto& x : v) n += x.marker == 0;
  return n;
}

}  // namespace

TEST(net_placement, stage_ranks_parse_and_refuse_with_the_bad_part_named) {
  auto p = net::stage_ranks("0;0,1; 1 ");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[1].rank_list(), (std::vector<std::size_t>{0, 1}));
  EXPECT_EQ(p[2].rank_list(), (std::vector<std::size_t>{1}));
  EXPECT_FALSE(p[0].places_threads());  // ranks only: the thread placement around it stays
  EXPECT_EQ(p[1].to_string(), "ranks 0,1");
  for (const char* bad : {"", "0;;1", "0;x", "0;1,-1", "0;99999999999", "0;1,"}) {
    try {
      net::stage_ranks(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string{e.what()}.find("stage"), std::string::npos) << e.what();
    }
  }
}

namespace {
struct pooled_probe {
  std::uint64_t a, b;
};
}  // namespace

TEST(net_channel, batch_buffers_go_back_to_a_bounded_pool) {
  using pool_batch = troupe::ext::batch<pooled_probe>;
  const pooled_probe* first = nullptr;
  {
    pool_batch b;
    b.items.resize(1000);
    first = b.items.data();
  }
  {
    pool_batch again;  // the buffer the last batch gave back, emptied
    EXPECT_EQ(again.items.data(), first);
    EXPECT_TRUE(again.items.empty());
    EXPECT_GE(again.items.capacity(), 1000u);
    pool_batch moved{std::move(again)};
    EXPECT_EQ(moved.items.data(), first);
  }
  // 100 batches die with a buffer each: the pool keeps 64 of them at most.
  {
    std::vector<pool_batch> many(100);
    for (auto& b : many) b.items.resize(10);
  }
  std::vector<pool_batch> taken(100);
  std::size_t with_room = 0;
  for (auto& b : taken) with_room += b.items.capacity() > 0 ? 1 : 0;
  EXPECT_GT(with_room, 0u);
  EXPECT_LE(with_room, 64u);
}

TEST(net_split, one_rank_runs_the_plain_graph) {
  duo d;
  auto out = std::make_shared<seen>();
  collect sink;
  sink.out = out;
  numbers src;
  src.n = 1000;
  auto p = troupe::pipeline{src, troupe::farm{tag_replica{}, 2}, sink};
  auto g1 = net::split(d[1], p, net::stage_ranks("0"));
  EXPECT_TRUE(g1.metrics().nodes.empty());  // nothing here: rank 1 is done at once
  EXPECT_TRUE(g1.wait_for(5s));
  auto g0 = net::split(d[0], p, net::stage_ranks("0"));
  g0.wait();
  EXPECT_EQ(out->all.size(), 1000u);
  EXPECT_EQ(g0.metrics().nodes.size(), 4u);  // no edge: the plain graph
}

TEST(net_split, a_pipeline_across_two_ranks_delivers_everything_in_order) {
  duo d;
  auto out = std::make_shared<seen>();
  collect sink;
  sink.out = out;
  numbers src;
  src.n = 200'000;
  run_both(d, troupe::pipeline{src, tag_replica{}, sink}, net::stage_ranks("0;1;0"));
  ASSERT_EQ(out->all.size(), 200'000u);
  for (std::size_t i = 0; i < out->all.size(); ++i) ASSERT_EQ(out->all[i].value, i);
}

TEST(net_split, round_robin_random_least_loaded_and_user_routed_farms_across_ranks_count_exactly) {
  for (int policy = 0; policy < 4; ++policy) {
    duo d;
    auto out = std::make_shared<seen>();
    collect sink;
    sink.out = out;
    numbers src;
    src.n = 50'000;
    const auto where = net::stage_ranks("0;0,1;1");
    if (policy == 0) run_both(d, troupe::pipeline{src, troupe::farm{tag_replica{}, 4}, sink}, where);
    else if (policy == 1)
      run_both(d, troupe::pipeline{src, troupe::farm{tag_replica{}, 4, troupe::least_loaded{}}, sink}, where);
    else if (policy == 2)
      run_both(d, troupe::pipeline{src, troupe::farm{tag_replica{}, 4, troupe::random_choice{}}, sink}, where);
    else
      run_both(d,
               troupe::pipeline{src,
                                troupe::farm{tag_replica{}, 4,
                                             [](const tagged_value& v, std::size_t n) { return (v.value / 10) % n; }},
                                sink},
               where);
    ASSERT_EQ(out->all.size(), 50'000u) << "policy " << policy;
    std::set<std::uint64_t> values;
    std::set<std::uint32_t> replicas;
    for (auto& v : out->all) {
      values.insert(v.value);
      replicas.insert(v.replica);
    }
    EXPECT_EQ(values.size(), 50'000u);
    if (policy != 1) {
      EXPECT_EQ(replicas.size(), 4u);  // every replica, on both ranks
    }
    if (policy == 3) {
      for (auto& v : out->all) {
        ASSERT_EQ(v.replica, (v.value / 10) % 4) << "the user's routing decides";
      }
    }
  }
}

TEST(net_split, by_key_sends_each_key_to_one_replica_across_ranks) {
  duo d;
  auto out = std::make_shared<seen>();
  collect sink;
  sink.out = out;
  numbers src;
  src.n = 60'000;
  auto key = troupe::by_key{[](const tagged_value& v) { return v.value % 97; }};
  run_both(d, troupe::pipeline{src, troupe::farm{tag_replica{}, 4, key}, troupe::farm{sink, 2}},
           net::stage_ranks("0;0,1;1,0"));
  ASSERT_EQ(out->all.size(), 60'000u);
  std::map<std::uint64_t, std::set<std::uint32_t>> where;
  for (auto& v : out->all) where[v.value % 97].insert(v.replica);
  ASSERT_EQ(where.size(), 97u);
  std::set<std::uint32_t> used;
  for (auto& [k, rs] : where) {
    EXPECT_EQ(rs.size(), 1u) << "key " << k << " reached several replicas";
    used.insert(*rs.begin());
    EXPECT_EQ(*rs.begin(),
              troupe::stream::replica_of_group(troupe::stream::key_group(std::hash<std::uint64_t>{}(k)), 4))
        << "key " << k;  // the policy's own pick
  }
  EXPECT_EQ(used.size(), 4u);
}

TEST(net_split, broadcast_reaches_every_replica_on_every_rank) {
  duo d;
  auto out = std::make_shared<seen>();
  collect sink;
  sink.out = out;
  numbers src;
  src.n = 10'000;
  run_both(d, troupe::pipeline{src, troupe::farm{tag_replica{}, 3, troupe::broadcast{}}, sink},
           net::stage_ranks("0;1,0,1;0"));
  ASSERT_EQ(out->all.size(), 30'000u);
  std::map<std::uint32_t, std::uint64_t> per_replica;
  for (auto& v : out->all) ++per_replica[v.replica];
  for (std::uint32_t r = 0; r < 3; ++r) EXPECT_EQ(per_replica[r], 10'000u);
}

TEST(net_split, punctuations_reach_every_replica_in_order) {
  duo d;
  auto out = std::make_shared<seen>();
  collect sink;
  sink.out = out;
  numbers src;
  src.n = 40'000;
  src.every = 1000;
  run_both(d, troupe::pipeline{src, troupe::farm{tag_replica{}, 2}, sink}, net::stage_ranks("0;0,1;1"));
  // Each replica's outputs reach the sink in the order it sent them.
  std::map<std::uint32_t, std::vector<tagged_value>> per;
  for (auto& v : out->all) per[v.replica].push_back(v);
  ASSERT_EQ(per.size(), 2u);
  for (auto& [r, vs] : per) {
    std::uint32_t last_marker = 0;
    std::uint64_t last_value = 0;
    bool any = false;
    for (auto& v : vs) {
      if (v.marker != 0) {
        ASSERT_EQ(v.marker, last_marker + 1) << "replica " << r;
        last_marker = v.marker;
        // Marker k follows element k*1000-1 and precedes k*1000.
        if (any) {
          EXPECT_LT(last_value, v.value);
        }
      } else {
        if (any) {
          ASSERT_LT(last_value, v.value) << "replica " << r;
        }
        EXPECT_EQ(v.value / 1000, last_marker) << "replica " << r << " value " << v.value;
        last_value = v.value;
        any = true;
      }
    }
    EXPECT_EQ(last_marker, 40u);
  }
  EXPECT_EQ(elements(out->all), 40'000u);
}

TEST(net_split, a_slow_consumer_holds_its_producer_back_within_the_window) {
  duo d;
  std::atomic<std::uint64_t> got{0}, most_ahead{0};
  std::atomic<std::uint64_t> made{0};
  numbers src;
  src.n = 30'000;
  auto counted = st::map([&made](tagged_value v) {
    made.fetch_add(1);
    return v;
  });
  auto slow = st::sink([&](const tagged_value&) {
    const auto ahead = made.load() - got.fetch_add(1);
    if (ahead > most_ahead.load()) most_ahead.store(ahead);
    if (got.load() % 1000 == 0) std::this_thread::sleep_for(2ms);
  });
  net::split_options o;
  o.edges.batch = 256;
  o.edges.window = 1024;
  o.stream.capacity = 64;
  run_both(d, troupe::pipeline{src, counted, slow}, net::stage_ranks("0;0;1"), o);
  EXPECT_EQ(got.load(), 30'000u);
  // The channels on both sides (64 each, and the sender's batch being
  // filled), the window, and a batch of the receiver's.
  EXPECT_LE(most_ahead.load(), 64u + 256u + 1024u + 256u + 64u);
}

TEST(net_split, a_failing_replica_ends_every_part_with_its_error) {
  duo d;
  numbers src;
  src.n = 1'000'000'000;  // would run for long: the failure must end it
  auto bad = st::map([](tagged_value v) {
    if (v.value == 5000) throw std::runtime_error("bad element 5000");
    return v;
  });
  auto p = troupe::pipeline{src, troupe::farm{bad, 2}, st::sink([](const tagged_value&) {})};
  const auto where = net::stage_ranks("0;1;0");
  expect_both_fail(d, p, where, "bad element 5000");
}

TEST(net_split, a_placement_that_does_not_fit_is_refused) {
  duo d;
  numbers src;
  auto p = troupe::pipeline{src, troupe::farm{tag_replica{}, 2}, st::sink([](const tagged_value&) {})};
  EXPECT_THROW(net::split(d[0], p, net::stage_ranks("0;2;0")), std::invalid_argument);
  EXPECT_THROW(net::split(d[0], p, net::stage_ranks("0;1;0;1")), std::invalid_argument);  // 4 stages for 3
  auto unsized = troupe::pipeline{src, troupe::farm{tag_replica{}}, st::sink([](const tagged_value&) {})};
  try {
    net::split(d[0], unsized, net::stage_ranks("0;1;0"));
    ADD_FAILURE() << "a farm of 0 replicas was split";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string{e.what()}.find("explicit count"), std::string::npos) << e.what();
  }
}

TEST(net_split, a_missing_peer_is_reported_after_the_connect_timeout) {
  duo d{300ms};
  numbers src;
  src.n = 10;
  auto p = troupe::pipeline{src, st::sink([](const tagged_value&) {})};
  try {
    net::split(d[0], p, net::stage_ranks("0;1"));  // rank 1 never runs its part
    ADD_FAILURE() << "no error";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("rank 1"), std::string::npos) << e.what();
  }
}

namespace {
struct late_atom {};
}  // namespace

TEST(net_types, a_type_registered_after_the_connection_crosses_it) {
  duo d;
  std::promise<int> got;
  auto receiver = d.sys1.spawn(
      [&got](troupe::event_actor&) { return troupe::behavior{[&got](late_atom, int x) { got.set_value(x); }}; });
  d.node1.publish(receiver, "late");
  auto proxy = d.node0.remote_actor(d.c1->self_address(), "late", 5s);  // the handshake happens here
  net::add_type<late_atom>("test.late_atom");                           // after it, on both nodes
  net::add_message<late_atom, int>();
  d.sys0.send(proxy, late_atom{}, 42);
  auto f = got.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready) << "the message was dropped as unsendable";
  EXPECT_EQ(f.get(), 42);
  EXPECT_EQ(d.node0.stats().unsendable, 0u);
}

TEST(net_split, four_stages_on_two_ranks_keep_order_and_report_each_rank_s_part) {
  duo d;
  auto out = std::make_shared<seen>();
  collect sink;
  sink.out = out;
  numbers src;
  src.n = 100'000;
  src.every = 10'000;
  // Source and first stage on rank 0, second stage and sink on rank 1: one
  // edge between them, SPSC channels on each side.
  auto p = troupe::pipeline{src, tag_replica{}, st::map([](tagged_value v) { return v; }), sink};
  auto [g0, g1] = split_both(d, p, net::stage_ranks("0;0;1;1"));
  g0.wait();
  g1.wait();
  ASSERT_EQ(out->all.size(), 100'010u);  // the elements and 10 punctuations
  std::uint64_t next = 0;
  std::uint32_t markers = 0;
  for (auto& v : out->all) {
    if (v.marker != 0) {
      EXPECT_EQ(v.marker, ++markers);
      EXPECT_EQ(v.value, next);  // after the elements before it
    } else {
      ASSERT_EQ(v.value, next++);
    }
  }
  auto m0 = g0.metrics(), m1 = g1.metrics();
  ASSERT_EQ(m0.nodes.size(), 3u);  // source, tag_replica, the edge to rank 1
  ASSERT_EQ(m1.nodes.size(), 3u);  // the edge from rank 0, map, sink
  EXPECT_EQ(m0.nodes[0].name, "source");
  EXPECT_EQ(m1.nodes[2].name, "sink");
  EXPECT_EQ(m1.nodes[2].items_in, 100'010u);
  for (auto& n : m0.nodes) EXPECT_EQ(n.rank, 0u);
  for (auto& n : m1.nodes) EXPECT_EQ(n.rank, 1u);
  EXPECT_NE(m0.nodes[2].name.find("to rank 1"), std::string::npos) << m0.nodes[2].name;
  EXPECT_NE(m1.nodes[0].name.find("from rank 0"), std::string::npos) << m1.nodes[0].name;
  EXPECT_EQ(m0.nodes[2].items_out, 100'010u);
}

/// Takes longer for some values, so that replicas overtake each other.
struct uneven : st::node<tagged_value, tagged_value> {
  void consume(tagged_value& v) {
    if (v.value % 13 == 0) std::this_thread::sleep_for(std::chrono::microseconds{30});
    v.replica = static_cast<std::uint32_t>(replica_index());
    send_next(std::move(v));
  }
};

TEST(net_split, an_ordered_farm_whose_replicas_span_ranks_keeps_the_input_order) {
  duo d;
  auto out = std::make_shared<seen>();
  collect sink;
  sink.out = out;
  numbers src;
  src.n = 20'000;
  auto p = troupe::pipeline{src, troupe::farm{uneven{}, 4, troupe::round_robin{}, troupe::ordered}, sink};
  net::split_options o;
  o.edges.batch = 128;
  o.edges.window = 1024;
  run_both(d, p, net::stage_ranks("0;1,0;0"), o);
  ASSERT_EQ(out->all.size(), 20'000u);
  std::set<std::uint32_t> replicas;
  for (std::size_t i = 0; i < out->all.size(); ++i) {
    ASSERT_EQ(out->all[i].value, i) << "out of order at " << i;
    replicas.insert(out->all[i].replica);
  }
  EXPECT_EQ(replicas.size(), 4u);
}
