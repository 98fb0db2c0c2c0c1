// Remote channels and split graphs (troupe::net): exact counts through
// channels and across ranks, every farm policy applied across ranks, end of
// stream, punctuations in order, credit bounding a slow consumer, failures
// ending every part with an error. Two ranks run in this one process (two
// actor systems, two nodes on loopback), so that the sanitizers see both
// sides; net_split_process_test.cpp runs ranks as processes.
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

template <class P>
void run_both(duo& d, const P& p, const net::placement& where, net::split_options o = {}) {
  auto g0 = net::split(d[0], p, where, o);
  auto g1 = net::split(d[1], p, where, o);
  g0.wait();
  g1.wait();
}

/// Runs `p` on both ranks and expects each part to end with an error that
/// says `what` (a failure reaches every part), not to hang.
template <class P>
void expect_both_fail(duo& d, const P& p, const net::placement& where, const std::string& what) {
  auto g0 = net::split(d[0], p, where);
  auto g1 = net::split(d[1], p, where);
  for (auto* g : {&g0, &g1}) {
    try {
      g->wait();
      ADD_FAILURE() << "a part ended without an error";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string{e.what()}.find(what), std::string::npos) << e.what();
    }
  }
}

std::uint64_t elements(const std::vector<tagged_value>& v) {
  std::uint64_t n = 0;
  for (auto& x : v) n += x.marker == 0;
  return n;
}

}  // namespace

TEST(net_placement, parses_and_refuses_with_the_bad_part_named) {
  auto p = net::placement::parse("0;0,1; 1 ");
  EXPECT_EQ(p.stages(), 3u);
  EXPECT_EQ(p.rank_of(1, 0), 0u);
  EXPECT_EQ(p.rank_of(1, 3), 1u);
  EXPECT_EQ(p.rank_of(7, 0), 1u);  // beyond the list: the last stage's
  EXPECT_EQ(p.max_rank(), 1u);
  EXPECT_FALSE(p.single_rank());
  EXPECT_EQ(p.to_string(), "0;0,1;1");
  EXPECT_TRUE(net::placement::parse("2;2").single_rank());
  for (const char* bad : {"", "0;;1", "0;x", "0;1,-1", "0;99999"}) {
    try {
      net::placement::parse(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string{e.what()}.find("is not a rank"), std::string::npos) << e.what();
    }
  }
}

TEST(net_channel, channel_out_to_channel_in_in_one_process_counts_exactly) {
  duo d;
  auto out = std::make_shared<seen>();
  collect sink;
  sink.out = out;
  numbers src;
  src.n = 100'003;
  // Rank 0 sends through two senders (a farm) to rank 1, which reads with two inlets.
  auto to = troupe::spawn_pattern(
      d.sys0, troupe::pipeline{src, troupe::farm{net::channel_out<tagged_value>(d[0], "c", {1, 1}), 2}});
  auto from = troupe::spawn_pattern(
      d.sys1, troupe::pipeline{troupe::farm{net::channel_in<tagged_value>(d[1], "c", 2), 2}, sink});
  to.wait();
  from.wait();
  ASSERT_EQ(out->all.size(), 100'003u);
  std::set<std::uint64_t> values;
  for (auto& v : out->all) values.insert(v.value);
  EXPECT_EQ(values.size(), 100'003u);
  EXPECT_EQ(*values.rbegin(), 100'002u);
}

namespace {
struct pooled_probe {
  std::uint64_t a, b;
};
}  // namespace

TEST(net_channel, batch_buffers_go_back_to_a_bounded_pool) {
  using pool_batch = net::detail::batch<pooled_probe>;
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

// Grants go back a quarter window at a time, or when the inlet runs dry. A
// sender that has ended must get its last acknowledgement at once, even while
// another sender keeps the inlet busy (here: for as long as it streams).
TEST(net_channel, a_sender_that_ended_is_acknowledged_while_another_keeps_the_inlet_busy) {
  duo d;
  std::atomic<std::uint64_t> got{0};
  auto slow = st::sink([&got](const tagged_value&) {
    if (got.fetch_add(1) % 1000 == 999) std::this_thread::sleep_for(1ms);
  });
  constexpr std::uint64_t long_stream = 400'000;
  numbers busy;  // rank 1's own sender: sender (1, 0)
  busy.n = long_stream;
  numbers brief;  // rank 0's sender: sender (0, 0), far less than a quarter window
  brief.n = 1000;
  auto in = troupe::spawn_pattern(d.sys1, troupe::pipeline{net::channel_in<tagged_value>(d[1], "c", 2), slow});
  auto from1 = troupe::spawn_pattern(d.sys1, troupe::pipeline{busy, net::channel_out<tagged_value>(d[1], "c", {1})});
  while (got.load() < 10'000) std::this_thread::sleep_for(1ms);  // the busy sender fills the inlet
  auto from0 = troupe::spawn_pattern(d.sys0, troupe::pipeline{brief, net::channel_out<tagged_value>(d[0], "c", {1})});
  from0.wait();  // its last acknowledgement came
  EXPECT_LT(got.load(), long_stream) << "the brief sender waited for the busy one to end";
  from1.wait();
  in.wait();
  EXPECT_EQ(got.load(), long_stream + 1000);
}

TEST(net_split, one_rank_runs_the_plain_graph) {
  duo d;
  auto out = std::make_shared<seen>();
  collect sink;
  sink.out = out;
  numbers src;
  src.n = 1000;
  auto p = troupe::pipeline{src, troupe::farm{tag_replica{}, 2}, sink};
  auto g1 = net::split(d[1], p, net::placement::single(0));
  EXPECT_TRUE(g1.empty());
  auto g0 = net::split(d[0], p, net::placement::single(0));
  g0.wait();
  EXPECT_EQ(out->all.size(), 1000u);
}

TEST(net_split, a_pipeline_across_two_ranks_delivers_everything_in_order) {
  duo d;
  auto out = std::make_shared<seen>();
  collect sink;
  sink.out = out;
  numbers src;
  src.n = 200'000;
  run_both(d, troupe::pipeline{src, tag_replica{}, sink}, net::placement::parse("0;1;0"));
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
    const auto where = net::placement::parse("0;0,1;1");
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
           net::placement::parse("0;0,1;1,0"));
  ASSERT_EQ(out->all.size(), 60'000u);
  std::map<std::uint64_t, std::set<std::uint32_t>> where;
  for (auto& v : out->all) where[v.value % 97].insert(v.replica);
  ASSERT_EQ(where.size(), 97u);
  std::set<std::uint32_t> used;
  for (auto& [k, rs] : where) {
    EXPECT_EQ(rs.size(), 1u) << "key " << k << " reached several replicas";
    used.insert(*rs.begin());
    EXPECT_EQ(*rs.begin(), std::hash<std::uint64_t>{}(k) % 4) << "key " << k;  // the policy's own pick
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
           net::placement::parse("0;1,0,1;0"));
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
  run_both(d, troupe::pipeline{src, troupe::farm{tag_replica{}, 2}, sink}, net::placement::parse("0;0,1;1"));
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
  std::atomic<std::uint64_t> got{0};
  numbers src;
  src.n = 30'000;
  auto slow = st::sink([&got](const tagged_value&) {
    if (got.fetch_add(1) % 1000 == 0) std::this_thread::sleep_for(2ms);
  });
  net::split_options o;
  o.channel.batch = 256;
  o.channel.window = 1024;
  auto p = troupe::pipeline{src, slow};
  const auto where = net::placement::parse("0;1");
  auto g0 = net::split(d[0], p, where, o);
  auto g1 = net::split(d[1], p, where, o);
  g0.wait();
  g1.wait();
  EXPECT_EQ(got.load(), 30'000u);
  EXPECT_GT(g1.peak_queued(), 0u);
  EXPECT_LE(g1.peak_queued(), 1024u);  // never more than one window queued at the inlet
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
  const auto where = net::placement::parse("0;1;0");
  expect_both_fail(d, p, where, "bad element 5000");
}

TEST(net_split, a_placement_that_does_not_fit_is_refused) {
  duo d;
  numbers src;
  auto p = troupe::pipeline{src, troupe::farm{tag_replica{}, 2}, st::sink([](const tagged_value&) {})};
  EXPECT_THROW(net::split(d[0], p, net::placement::parse("0;2;0")), std::invalid_argument);
  auto unsized = troupe::pipeline{src, troupe::farm{tag_replica{}}, st::sink([](const tagged_value&) {})};
  try {
    net::split(d[0], unsized, net::placement::parse("0;1;0"));
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
  auto g0 = net::split(d[0], p, net::placement::parse("0;1"));  // rank 1 never runs its part
  try {
    g0.wait();
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

TEST(net_split, stages_of_one_replica_on_one_rank_run_fused_in_order) {
  duo d;
  auto out = std::make_shared<seen>();
  collect sink;
  sink.out = out;
  numbers src;
  src.n = 100'000;
  src.every = 10'000;
  // Source and first stage fused on rank 0, second stage and sink fused on rank 1.
  const auto where = net::placement::parse("0;0;1;1");
  auto p = troupe::pipeline{src, tag_replica{}, st::map([](tagged_value v) { return v; }), sink};
  auto g0 = net::split(d[0], p, where);
  auto g1 = net::split(d[1], p, where);
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
  // One thread per rank: the fused stages report under their own kinds.
  auto m0 = g0.metrics(), m1 = g1.metrics();
  ASSERT_EQ(m0.nodes.size(), 2u);
  ASSERT_EQ(m1.nodes.size(), 2u);
  EXPECT_EQ(m0.nodes[0].name, "source");
  EXPECT_EQ(m1.nodes[1].name, "sink");
  EXPECT_EQ(m1.nodes[1].items_in, 100'010u);
}

TEST(net_split, a_failing_fused_stage_ends_every_part_with_its_error) {
  duo d;
  numbers src;
  src.n = 1'000'000'000;
  auto bad = st::map([](tagged_value v) {
    if (v.value == 3000) throw std::runtime_error("fused stage failed at 3000");
    return v;
  });
  auto p = troupe::pipeline{src, tag_replica{}, bad, st::sink([](const tagged_value&) {})};
  const auto where = net::placement::parse("0;0;1;1");
  expect_both_fail(d, p, where, "fused stage failed at 3000");
}
