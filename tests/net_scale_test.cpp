// troupe::net with many nodes: one connection per pair of nodes (two nodes
// connecting to each other at the same time end with one session), no
// heartbeats on links that carry data, asynchronous lookups (many in flight
// from one thread; a dead endpoint fails at its timeout), handles to actors
// on a third node (forwarded by the node that passed them on), and a mesh of
// 32 processes on loopback (net_scale_process: heavy). The mesh's children
// are this binary again (net_process_test.cpp's main: TROUPE_NET_TEST_MESH).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "net_process_support.hpp"
#include "troupe/net/node.hpp"

using namespace std::chrono_literals;
using troupe::actor;
using troupe::behavior;
using troupe::error;
using troupe::event_actor;
namespace net = troupe::net;

namespace {

struct which_atom {};  // answers the node's incarnation
struct hand_atom {};   // answers a handle the actor holds

void register_scale_types() {
  static const bool once = [] {
    net::add_type<which_atom>("scale.which_atom");
    net::add_type<hand_atom>("scale.hand_atom");
    net::add_message<which_atom>();
    net::add_message<hand_atom>();
    net::add_message<std::uint64_t>();
    net::add_message<actor>();
    return true;
  }();
  (void)once;
}

net::node_config plain(const std::string& name) {
  net::node_config c;
  c.security = net::security::plaintext;
  c.name = name;
  c.log = [](const std::string&) {};
  return c;
}

/// An actor that answers which_atom with its node's incarnation.
actor which(troupe::actor_system& sys, std::uint64_t inc) {
  return sys.spawn([inc](event_actor&) { return behavior{[inc](which_atom) { return inc; }}; });
}

/// One actor system and its node, listening on loopback.
struct member {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  net::node node;
  std::string endpoint;
  explicit member(const std::string& name, net::node_config cfg = {}) : node{sys, with_name(std::move(cfg), name)} {
    endpoint = node.listen("tcp://127.0.0.1:*");
    node.publish(which(sys, node.incarnation()), "which");
  }
  static net::node_config with_name(net::node_config c, const std::string& name) {
    auto p = plain(name);
    p.heartbeat_interval = c.heartbeat_interval;
    p.heartbeat_timeout = c.heartbeat_timeout;
    p.acceptable_heartbeat_pause = c.acceptable_heartbeat_pause;
    return p;
  }
};

/// Waits (bounded) until `pred` holds.
template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 10s) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

std::uint64_t ask_which(troupe::actor_system& sys, const actor& a) {
  troupe::scoped_actor self{sys};
  std::uint64_t got = 0;
  self->request(a, 10s, which_atom{})
      .receive([&](std::uint64_t v) { got = v; }, [](error& e) { ADD_FAILURE() << e.to_string(); });
  return got;
}

/// The outcome of an asynchronous lookup, as a future.
std::future<net::node::lookup_outcome> lookup_future(net::node& n, const std::string& endpoint, const std::string& name,
                                                     std::chrono::milliseconds timeout) {
  auto p = std::make_shared<std::promise<net::node::lookup_outcome>>();
  auto f = p->get_future();
  n.remote_actor_async({endpoint, ""}, name, timeout, [p](net::node::lookup_outcome o) { p->set_value(std::move(o)); });
  return f;
}

}  // namespace

// ---------------------------------------------------------------- one connection per pair

TEST(net_scale, a_node_that_connected_to_us_is_reached_over_its_own_connection) {
  register_scale_types();
  member a{"a"}, b{"b"};
  auto to_b = a.node.remote_actor({b.endpoint, ""}, "which", 10s);
  EXPECT_EQ(ask_which(a.sys, to_b), b.node.incarnation());
  // B looks A up: A's hello told B where A listens, so B uses that session.
  auto to_a = b.node.remote_actor({a.endpoint, ""}, "which", 10s);
  EXPECT_EQ(ask_which(b.sys, to_a), a.node.incarnation());
  EXPECT_EQ(a.node.stats().peers, 1U);
  EXPECT_EQ(b.node.stats().peers, 1U);
}

TEST(net_scale, two_nodes_connecting_to_each_other_at_once_end_with_one_session_each) {
  register_scale_types();
  for (int round = 0; round < 8; ++round) {
    member a{"a"}, b{"b"};
    // Both lookups leave before either node has heard of the other.
    auto fa = lookup_future(a.node, b.endpoint, "which", 10s);
    auto fb = lookup_future(b.node, a.endpoint, "which", 10s);
    auto oa = fa.get(), ob = fb.get();
    ASSERT_TRUE(oa.handle) << oa.error;
    ASSERT_TRUE(ob.handle) << ob.error;
    EXPECT_EQ(ask_which(a.sys, oa.handle), b.node.incarnation());
    EXPECT_EQ(ask_which(b.sys, ob.handle), a.node.incarnation());
    EXPECT_TRUE(eventually([&] { return a.node.stats().peers == 1 && b.node.stats().peers == 1; }))
        << "round " << round << ": " << a.node.stats().peers << " and " << b.node.stats().peers << " connections";
    // Refused duplicates end quietly: nobody is lost or unreachable.
    EXPECT_EQ(a.node.stats().peers_lost + b.node.stats().peers_lost, 0U);
  }
}

// ---------------------------------------------------------------- heartbeats

TEST(net_scale, links_that_carry_data_send_no_heartbeats) {
  register_scale_types();
  net::node_config cfg;
  cfg.heartbeat_interval = 200ms;
  cfg.heartbeat_timeout = 5s;
  cfg.acceptable_heartbeat_pause = 2s;
  member a{"a", cfg}, b{"b", cfg};
  auto to_b = a.node.remote_actor({b.endpoint, ""}, "which", 10s);
  auto beats = [&] { return a.node.stats().heartbeats_out + b.node.stats().heartbeats_out; };
  // Idle: both sides send heartbeats.
  const auto idle_from = beats();
  std::this_thread::sleep_for(1500ms);
  const auto idle = beats() - idle_from;
  EXPECT_GE(idle, 2U);
  // Busy both ways (requests and answers, back to back): none.
  const auto busy_from = beats();
  troupe::scoped_actor self{a.sys};
  const auto until = std::chrono::steady_clock::now() + 1500ms;
  int answers = 0;
  while (std::chrono::steady_clock::now() < until) {
    self->request(to_b, 10s, which_atom{})
        .receive([&](std::uint64_t) { ++answers; }, [](error& e) { ADD_FAILURE() << e.to_string(); });
  }
  const auto busy = beats() - busy_from;
  EXPECT_GT(answers, 10);
  EXPECT_LT(busy, idle) << "heartbeats while data flowed both ways: " << busy << " (idle: " << idle << ")";
}

// ---------------------------------------------------------------- asynchronous lookups

TEST(net_scale, many_lookups_are_in_flight_from_one_thread) {
  register_scale_types();
  member a{"a"}, b{"b"};
  constexpr int n = 200;
  std::atomic<int> found{0}, unknown{0}, other{0};
  std::promise<void> all;
  std::atomic<int> left{n};
  for (int i = 0; i < n; ++i) {
    a.node.remote_actor_async({b.endpoint, ""}, i % 2 == 0 ? "which" : "nobody", 10s,
                              [&, i](net::node::lookup_outcome o) {
                                if (i % 2 == 0 && o.handle && o.error.empty()) ++found;
                                else if (i % 2 == 1 && !o.handle && o.error.find("nobody") != std::string::npos)
                                  ++unknown;
                                else ++other;
                                if (--left == 0) all.set_value();
                              });
  }
  ASSERT_EQ(all.get_future().wait_for(30s), std::future_status::ready);
  EXPECT_EQ(found.load(), n / 2);
  EXPECT_EQ(unknown.load(), n / 2);
  EXPECT_EQ(other.load(), 0);
  EXPECT_EQ(a.node.stats().peers, 1U);
}

TEST(net_scale, a_lookup_of_a_dead_endpoint_fails_at_its_timeout_with_a_clear_error) {
  register_scale_types();
  member a{"a"};
  std::string dead;
  {
    member gone{"gone"};
    dead = gone.endpoint;
  }  // nobody listens there any more
  const auto start = std::chrono::steady_clock::now();
  auto f = lookup_future(a.node, dead, "which", 300ms);
  ASSERT_EQ(f.wait_for(20s), std::future_status::ready);
  const auto o = f.get();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_FALSE(o.handle);
  EXPECT_NE(o.error.find("no answer within 300 ms"), std::string::npos) << o.error;
  EXPECT_NE(o.error.find(dead), std::string::npos) << o.error;
  // The blocking form says the same, as a net_error.
  try {
    (void)a.node.remote_actor({dead, ""}, "which", 300ms);
    ADD_FAILURE() << "no error";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("no answer within 300 ms"), std::string::npos) << e.what();
  }
}

TEST(net_scale, an_asynchronous_lookup_needs_a_callback_and_a_curve_key) {
  register_scale_types();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  net::node_config cfg;
  cfg.keys = net::generate_key_pair();
  cfg.log = [](const std::string&) {};
  net::node n{sys, cfg};
  EXPECT_THROW(n.remote_actor_async({"tcp://127.0.0.1:1", "short"}, "x", 1s, [](net::node::lookup_outcome) {}),
               net::net_error);
  EXPECT_THROW(n.remote_actor_async({"tcp://127.0.0.1:1", ""}, "x", 1s, {}), net::net_error);
}

// ---------------------------------------------------------------- third-node handles

TEST(net_scale, a_handle_to_an_actor_on_a_third_node_works) {
  register_scale_types();
  member a{"a"}, b{"b"}, c{"c"};
  // B holds a handle to C's actor and gives it to whoever asks.
  auto c_which = b.node.remote_actor({c.endpoint, ""}, "which", 10s);
  b.node.publish(b.sys.spawn([c_which](event_actor&) { return behavior{[c_which](hand_atom) { return c_which; }}; }),
                 "broker");
  auto broker = a.node.remote_actor({b.endpoint, ""}, "broker", 10s);
  troupe::scoped_actor self{a.sys};
  actor got;
  self->request(broker, 10s, hand_atom{})
      .receive([&](actor h) { got = std::move(h); }, [](error& e) { ADD_FAILURE() << e.to_string(); });
  ASSERT_TRUE(got) << "the handle arrived empty";
  // A asks C's actor directly (B forwards): the answer is C's.
  EXPECT_EQ(ask_which(a.sys, got), c.node.incarnation());
  EXPECT_EQ(ask_which(a.sys, got), c.node.incarnation());
  // A monitor on it reports C's actor's end.
  std::promise<error> down;
  a.sys.spawn([got, &down](event_actor& me) {
    me.set_down_handler([&down](troupe::down_msg& d) { down.set_value(d.reason); });
    me.monitor(got);
    return behavior{[](which_atom) {}};
  });
  c.node.close();
  auto f = down.get_future();
  EXPECT_EQ(f.wait_for(20s), std::future_status::ready) << "no down message for the third node's actor";
}

// ---------------------------------------------------------------- a mesh of processes

namespace {

/// A mesh member (a child process): listens, reports its endpoint, reads
/// every member's endpoint from `dir`/endpoints, looks each one's "which"
/// up (asynchronously, all at once), asks each once, reports "reached <n>",
/// then, once `dir`/settled exists, "peers <connections> <refused>".
int mesh_member(const std::string& dir, int out) {
  net_proc::register_types();
  register_scale_types();
  auto say = [out](const std::string& line) {
    const std::string l = line + "\n";
    [[maybe_unused]] auto w = write(out, l.data(), l.size());
  };
  troupe::actor_system sys{troupe::config{.workers = 1}};
  net::node node{sys, plain("mesh")};
  const auto self_endpoint = node.listen("tcp://127.0.0.1:*");
  node.publish(which(sys, node.incarnation()), "which");
  say(self_endpoint);
  auto wait_file = [&](const std::string& name) {
    for (int i = 0; i < 6000 && !std::filesystem::exists(dir + "/" + name); ++i) std::this_thread::sleep_for(10ms);
    return std::filesystem::exists(dir + "/" + name);
  };
  if (!wait_file("endpoints")) return say("error: no endpoints"), 1;
  std::vector<std::string> others;
  {
    std::ifstream f{dir + "/endpoints"};
    for (std::string e; f >> e;)
      if (e != self_endpoint) others.push_back(e);
  }
  std::vector<std::future<net::node::lookup_outcome>> lookups;
  lookups.reserve(others.size());
  for (const auto& e : others) lookups.push_back(lookup_future(node, e, "which", 30s));
  std::size_t reached = 0;
  for (auto& l : lookups) {
    auto o = l.get();
    if (!o.handle) {
      say("error: " + o.error);
      continue;
    }
    troupe::scoped_actor self{sys};
    self->request(o.handle, 30s, which_atom{})
        .receive([&](std::uint64_t) { ++reached; }, [&](error& e) { say("error: " + e.to_string()); });
  }
  say("reached " + std::to_string(reached));
  if (!wait_file("settled")) return say("error: not settled"), 1;
  const auto st = node.stats();
  say("peers " + std::to_string(st.peers) + " " + std::to_string(st.duplicates_refused));
  for (int i = 0; i < 6000 && !std::filesystem::exists(dir + "/end"); ++i) std::this_thread::sleep_for(10ms);
  return 0;
}

}  // namespace

int net_proc::mesh_child_main(const char* dir, int out) {
  alarm(120);  // never outlive the test run
  return mesh_member(dir, out);
}

TEST(net_scale_process, a_mesh_of_32_nodes_has_one_connection_per_pair) {
  constexpr std::size_t nodes = 32;
  const auto dir = std::filesystem::temp_directory_path() / ("troupe_mesh_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  struct cleanup {
    std::filesystem::path d;
    ~cleanup() { std::filesystem::remove_all(d); }
  } remove_dir{dir};
  std::vector<std::unique_ptr<net_proc::child>> members;
  for (std::size_t i = 0; i < nodes; ++i)
    members.push_back(
        std::make_unique<net_proc::child>("TROUPE_NET_TEST_MESH=" + dir.string(), std::vector<std::string>{}, 0));
  std::ostringstream endpoints;
  for (auto& m : members) {
    const auto e = m->read_line(60s);
    ASSERT_EQ(e.rfind("tcp://", 0), 0U) << "a member did not report its endpoint: '" << e << "'";
    endpoints << e << '\n';
  }
  {
    std::ofstream{dir / "endpoints.tmp"} << endpoints.str();
    std::filesystem::rename(dir / "endpoints.tmp", dir / "endpoints");
  }
  for (auto& m : members) EXPECT_EQ(m->read_line(90s), "reached " + std::to_string(nodes - 1));
  std::ofstream{dir / "settled"} << "\n";
  std::size_t refused = 0;
  for (auto& m : members) {
    std::istringstream line{m->read_line(30s)};
    std::string word;
    std::size_t peers = 0, dup = 0;
    line >> word >> peers >> dup;
    EXPECT_EQ(word, "peers");
    EXPECT_EQ(peers, nodes - 1) << "connections of a member (one per pair: " << nodes - 1 << ")";
    refused += dup;
  }
  std::ofstream{dir / "end"} << "\n";
  members.clear();  // killed and reaped
  std::printf("mesh of %zu nodes: %zu duplicate connections refused\n", nodes, refused);
}
