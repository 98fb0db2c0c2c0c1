// troupe::net in one process: two actor systems, each with its own node,
// talking over loopback TCP (the same code path as two processes). The
// multi-process failure tests are in net_process_test.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "fuzz/net_wire_fuzz.hpp"
#include "troupe/net/node.hpp"

using namespace std::chrono_literals;
using troupe::actor;
using troupe::behavior;
using troupe::errc;
using troupe::error;
using troupe::event_actor;
namespace net = troupe::net;

namespace {

struct point {
  double x = 0, y = 0;
};
struct shape {  // written through cereal
  std::string name;
  std::vector<point> corners;
  template <class Archive>
  void serialize(Archive& ar) {
    ar(name, corners);
  }
};
template <class Archive>
void serialize(Archive& ar, point& p) {
  ar(p.x, p.y);
}
struct add_atom {};
struct hold_atom {};
struct quit_atom {};
struct where_atom {};
using calculator = troupe::typed_actor<int(add_atom, int, int)>;

void register_types() {
  static const bool once = [] {
    net::add_type<point>("point");
    net::add_type<shape>("shape");
    net::add_type<add_atom>("add_atom");
    net::add_type<hold_atom>("hold_atom");
    net::add_type<quit_atom>("quit_atom");
    net::add_type<where_atom>("where_atom");
    net::add_message<int>();
    net::add_message<std::int64_t>();
    net::add_message<std::string>();
    net::add_message<shape>();
    net::add_message<hold_atom>();
    net::add_message<quit_atom>();
    net::add_message<troupe::get_atom>();
    net::add_message<where_atom, actor>();
    net::add_message<std::string, actor>();
    net::add_message<std::vector<std::int64_t>>();
    return true;
  }();
  (void)once;
}

// These tests do not test failure detection (net_process_test.cpp does): a
// long heartbeat timeout keeps a machine loaded by parallel (sanitizer) test
// runs from declaring a slow peer lost.
constexpr auto relaxed_timeout = std::chrono::milliseconds{5000};

net::node_config plain(const char* name) {
  net::node_config c;
  c.security = net::security::plaintext;
  c.heartbeat_timeout = relaxed_timeout;
  c.name = name;
  return c;
}

/// Two systems and nodes; `server` listens on a free loopback port.
struct pair_fixture {
  explicit pair_fixture(net::node_config sc = plain("server"), net::node_config cc = plain("client"))
      : server_sys{troupe::config{.workers = 2}},
        client_sys{troupe::config{.workers = 2}},
        server{server_sys, std::move(sc)},
        client{client_sys, std::move(cc)} {
    register_types();
    endpoint = server.listen("tcp://127.0.0.1:*");
  }
  troupe::actor_system server_sys;
  troupe::actor_system client_sys;
  net::node server;
  net::node client;
  std::string endpoint;
};

std::string describe(const net::node& n) {
  auto s = n.stats();
  return "frames in/out " + std::to_string(s.frames_in) + "/" + std::to_string(s.frames_out) + ", messages in/out " +
         std::to_string(s.messages_in) + "/" + std::to_string(s.messages_out) + ", malformed " +
         std::to_string(s.malformed) + ", stale " + std::to_string(s.stale) + ", lost " + std::to_string(s.peers_lost) +
         ", peers " + std::to_string(s.peers) + ", proxies " + std::to_string(s.proxies);
}
std::string describe(const pair_fixture& f) {
  return "server: " + describe(f.server) + "; client: " + describe(f.client);
}

}  // namespace

// ---------------------------------------------------------------- codec

TEST(net_codec, values_round_trip) {
  register_types();
  std::string buf;
  net::writer w{buf, nullptr};
  shape s{"tri", {{0, 0}, {1, 0}, {0, 1}}};
  net::codec<shape>::write(w, s);
  net::codec<std::string>::write(w, std::string{"hello"});
  net::codec<std::vector<std::int64_t>>::write(w, std::vector<std::int64_t>{1, 2, 3});
  net::codec<bool>::write(w, true);
  net::codec<error>::write(w, error{errc::user_shutdown, "bye"});
  net::reader r{buf.data(), buf.data() + buf.size(), nullptr};
  shape s2;
  std::string str;
  std::vector<std::int64_t> v;
  bool b = false;
  error e;
  net::codec<shape>::read(r, s2);
  net::codec<std::string>::read(r, str);
  net::codec<std::vector<std::int64_t>>::read(r, v);
  net::codec<bool>::read(r, b);
  net::codec<error>::read(r, e);
  EXPECT_EQ(r.left(), 0U);
  EXPECT_EQ(s2.name, "tri");
  ASSERT_EQ(s2.corners.size(), 3U);
  EXPECT_EQ(s2.corners[2].y, 1.0);
  EXPECT_EQ(str, "hello");
  EXPECT_EQ(v, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_TRUE(b);
  EXPECT_EQ(e.code(), errc::user_shutdown);
  EXPECT_EQ(e.message(), "bye");
}

TEST(net_codec, every_truncation_is_a_decode_error) {
  register_types();
  std::string buf;
  net::writer w{buf, nullptr};
  net::codec<shape>::write(w, shape{"square", {{0, 0}, {1, 0}, {1, 1}, {0, 1}}});
  net::codec<std::vector<std::int64_t>>::write(w, std::vector<std::int64_t>{7, 8});
  for (std::size_t len = 0; len < buf.size(); ++len) {
    net::reader r{buf.data(), buf.data() + len, nullptr};
    EXPECT_THROW(
        {
          shape s;
          std::vector<std::int64_t> v;
          net::codec<shape>::read(r, s);
          net::codec<std::vector<std::int64_t>>::read(r, v);
        },
        net::decode_error)
        << "length " << len;
  }
}

TEST(net_codec, a_huge_length_is_refused_before_allocating) {
  std::string buf;
  net::writer w{buf, nullptr};
  w.raw(std::uint32_t{0xffffffff});
  buf += "abc";
  net::reader r{buf.data(), buf.data() + buf.size(), nullptr};
  std::string s;
  EXPECT_THROW(net::codec<std::string>::read(r, s), net::decode_error);
}

TEST(net_codec, a_type_without_a_name_is_a_clear_error) {
  struct nameless {
    int a;
    auto fields() { return std::tie(a); }
  };
  try {
    net::add_message<nameless>();
    FAIL() << "expected std::logic_error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string{e.what()}.find("add_type"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- messaging

TEST(net, request_response_with_a_dynamic_actor) {
  pair_fixture f;
  f.server.publish(f.server_sys.spawn([](event_actor&) { return behavior{[](int x) { return x * 2; }}; }), "doubler");
  auto d = f.client.remote_actor({f.endpoint, {}}, "doubler", 5s);
  ASSERT_TRUE(d);
  troupe::scoped_actor self{f.client_sys};
  int got = 0;
  self->request(d, 5s, 21).receive([&](int v) { got = v; }, [](error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(got, 42);
}

TEST(net, typed_actor_keeps_its_static_interface) {
  pair_fixture f;
  calculator c = f.server_sys.spawn(
      [](event_actor&) -> calculator::behavior_type { return {[](add_atom, int a, int b) { return a + b; }}; });
  f.server.publish(c, "calc");
  auto rc = f.client.remote_actor<calculator>({f.endpoint, {}}, "calc", 5s);
  troupe::scoped_actor self{f.client_sys};
  int got = 0;
  self->request(rc, 5s, add_atom{}, 20, 22).receive([&](int v) { got = v; }, [](error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(got, 42);
  // The same name looked up with another interface is refused.
  using other = troupe::typed_actor<void(quit_atom)>;
  EXPECT_THROW(f.client.remote_actor<other>({f.endpoint, {}}, "calc", 5s), net::net_error);
}

TEST(net, user_types_cross_through_cereal) {
  pair_fixture f;
  f.server.publish(f.server_sys.spawn([](event_actor&) {
    return behavior{[](const shape& s) { return s.name + ":" + std::to_string(s.corners.size()); }};
  }),
                   "shapes");
  auto a = f.client.remote_actor({f.endpoint, {}}, "shapes", 5s);
  troupe::scoped_actor self{f.client_sys};
  std::string got;
  self->request(a, 5s, shape{"tri", {{0, 0}, {1, 0}, {0, 1}}})
      .receive([&](const std::string& s) { got = s; }, [](error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(got, "tri:3");
}

TEST(net, handles_inside_messages_become_proxies_and_route_back) {
  pair_fixture f;
  // The server answers to whatever actor it is given (not to the sender).
  f.server.publish(f.server_sys.spawn([](event_actor& self) {
    return behavior{[&self](where_atom, actor reply_to) { self.send(reply_to, std::string{"found you"}); }};
  }),
                   "echo");
  auto echo = f.client.remote_actor({f.endpoint, {}}, "echo", 5s);
  std::promise<std::string> got;
  auto listener =
      f.client_sys.spawn([&got](event_actor&) { return behavior{[&got](const std::string& s) { got.set_value(s); }}; });
  f.client_sys.send(echo, where_atom{}, listener);
  auto fut = got.get_future();
  ASSERT_EQ(fut.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(fut.get(), "found you");
}

TEST(net, order_is_kept_per_sender_and_receiver) {
  pair_fixture f;
  constexpr std::int64_t n = 20'000;
  std::promise<bool> in_order;
  f.server.publish(f.server_sys.spawn([&in_order](event_actor&) {
    return behavior{[&in_order, next = std::int64_t{0}](std::int64_t v) mutable {
      if (v != next) in_order.set_value(false);
      if (v != next) next = -1'000'000'000;  // report once
      if (++next == n) in_order.set_value(true);
    }};
  }),
                   "sink");
  auto sink = f.client.remote_actor({f.endpoint, {}}, "sink", 5s);
  f.client_sys.spawn(
      [](event_actor& self, actor to) {
        for (std::int64_t i = 0; i < n; ++i) self.send(to, i);
      },
      sink);
  auto fut = in_order.get_future();
  ASSERT_EQ(fut.wait_for(30s), std::future_status::ready) << describe(f);
  EXPECT_TRUE(fut.get());
}

TEST(net, monitor_sees_a_remote_actor_end_with_its_reason) {
  pair_fixture f;
  f.server.publish(f.server_sys.spawn([](event_actor& self) {
    return behavior{[&self](quit_atom) { self.quit(error{errc::user_shutdown, "asked to"}); }};
  }),
                   "mortal");
  auto m = f.client.remote_actor({f.endpoint, {}}, "mortal", 5s);
  std::promise<error> down;
  f.client_sys.spawn(
      [&down](event_actor& self, actor target) {
        self.set_down_handler([&down](troupe::down_msg& d) { down.set_value(d.reason); });
        self.monitor(target);
        self.send(target, quit_atom{});
        return behavior{[](int) {}};
      },
      m);
  auto fut = down.get_future();
  ASSERT_EQ(fut.wait_for(10s), std::future_status::ready);
  auto e = fut.get();
  EXPECT_EQ(e.code(), errc::user_shutdown);
  EXPECT_EQ(e.message(), "asked to");
}

TEST(net, links_work_in_both_directions) {
  pair_fixture f;
  // The remote actor traps exits and reports what it got to a local observer.
  std::promise<errc> remote_saw;
  f.server.publish(f.server_sys.spawn([&remote_saw](event_actor& self) {
    self.set_exit_handler([&remote_saw](troupe::exit_msg& m) { remote_saw.set_value(m.reason.code()); });
    return behavior{[&self](quit_atom) { self.quit(error{errc::user_shutdown, "done"}); }};
  }),
                   "partner");
  auto partner = f.client.remote_actor({f.endpoint, {}}, "partner", 5s);
  // A local actor links to it and then fails: the remote side gets an exit_msg.
  f.client_sys.spawn(
      [](event_actor& self, actor p) {
        self.link_to(p);
        self.quit(error{errc::user_shutdown, "local failure"});
      },
      partner);
  auto fut = remote_saw.get_future();
  ASSERT_EQ(fut.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(fut.get(), errc::user_shutdown);
  // And the other way: the remote actor ends, a linked local actor learns it.
  std::promise<errc> local_saw;
  f.client_sys.spawn(
      [&local_saw](event_actor& self, actor p) {
        self.set_exit_handler([&local_saw](troupe::exit_msg& m) { local_saw.set_value(m.reason.code()); });
        self.link_to(p);
        self.send(p, quit_atom{});
        return behavior{[](int) {}};
      },
      partner);
  auto fut2 = local_saw.get_future();
  ASSERT_EQ(fut2.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(fut2.get(), errc::user_shutdown);
}

TEST(net, an_unregistered_message_type_fails_the_request_with_its_name) {
  pair_fixture f;
  f.server.publish(f.server_sys.spawn([](event_actor&) { return behavior{[](int x) { return x; }}; }), "a");
  auto a = f.client.remote_actor({f.endpoint, {}}, "a", 5s);
  troupe::scoped_actor self{f.client_sys};
  error got;
  self->request(a, 5s, 1.5f).receive([](float) {}, [&](error& e) { got = e; });
  EXPECT_NE(got.message().find("not registered"), std::string::npos) << got.to_string();
  EXPECT_GE(f.client.stats().unsendable, 1U);
}

TEST(net, lookups_fail_with_clear_errors) {
  pair_fixture f;
  try {
    (void)f.client.remote_actor({f.endpoint, {}}, "nobody", 5s);
    FAIL() << "expected net_error";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("no actor is published as 'nobody'"), std::string::npos) << e.what();
  }
  try {
    (void)f.client.remote_actor({"tcp://127.0.0.1", {}}, "x", 1s);
    FAIL() << "expected net_error";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("bad endpoint"), std::string::npos) << e.what();
  }
  try {
    (void)f.client.remote_actor({"tcp://127.0.0.1:1", {}}, "x", 300ms);  // nobody listens on port 1
    FAIL() << "expected net_error";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("no answer within 300 ms"), std::string::npos) << e.what();
  }
  EXPECT_THROW(f.server.listen("tcp://not-an-address:x"), net::net_error);
}

TEST(net, a_closed_node_ends_its_proxies) {
  pair_fixture f;
  f.server.publish(f.server_sys.spawn([](event_actor&) { return behavior{[](int x) { return x; }}; }), "a");
  auto a = f.client.remote_actor({f.endpoint, {}}, "a", 5s);
  std::promise<errc> down;
  f.client_sys.spawn(
      [&down](event_actor& self, actor target) {
        self.set_down_handler([&down](troupe::down_msg& d) { down.set_value(d.reason.code()); });
        self.monitor(target);
        return behavior{[](int) {}};
      },
      a);
  f.server.close();
  auto fut = down.get_future();
  ASSERT_EQ(fut.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(fut.get(), errc::remote_unreachable);
}

// ---------------------------------------------------------------- security

TEST(net_curve, trusted_keys_connect_and_talk) {
  auto sk = net::generate_key_pair();
  auto ck = net::generate_key_pair();
  net::node_config sc{
      .keys = sk, .trusted_keys = {ck.public_key}, .heartbeat_timeout = relaxed_timeout, .name = "server"};
  net::node_config cc{
      .keys = ck, .trusted_keys = {sk.public_key}, .heartbeat_timeout = relaxed_timeout, .name = "client"};
  pair_fixture f{sc, cc};
  f.server.publish(f.server_sys.spawn([](event_actor&) { return behavior{[](int x) { return x + 1; }}; }), "inc");
  auto a = f.client.remote_actor({f.endpoint, sk.public_key}, "inc", 5s);
  troupe::scoped_actor self{f.client_sys};
  int got = 0;
  self->request(a, 5s, 1).receive([&](int v) { got = v; }, [](error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(got, 2);
}

TEST(net_curve, an_unknown_key_delivers_nothing) {
  auto sk = net::generate_key_pair();
  auto stranger = net::generate_key_pair();
  auto other = net::generate_key_pair();
  net::node_config sc{
      .keys = sk, .trusted_keys = {other.public_key}, .heartbeat_timeout = relaxed_timeout, .name = "server"};
  net::node_config cc{
      .keys = stranger, .trusted_keys = {sk.public_key}, .heartbeat_timeout = relaxed_timeout, .name = "stranger"};
  pair_fixture f{sc, cc};
  std::atomic<int> delivered{0};
  f.server.publish(
      f.server_sys.spawn([&delivered](event_actor&) { return behavior{[&delivered](int) { ++delivered; }}; }),
      "guarded");
  try {
    (void)f.client.remote_actor({f.endpoint, sk.public_key}, "guarded", 500ms);
    FAIL() << "expected net_error";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("keys do not match"), std::string::npos) << e.what();
  }
  EXPECT_GE(f.server.stats().rejected_keys, 1U);
  EXPECT_EQ(f.server.stats().frames_in, 0U);
  EXPECT_EQ(delivered.load(), 0);
}

TEST(net_curve, bad_keys_in_the_configuration_are_named) {
  troupe::actor_system sys;
  try {
    net::node n{sys, net::node_config{}};
    FAIL() << "expected net_error";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("node_config.keys"), std::string::npos) << e.what();
  }
  auto k = net::generate_key_pair();
  try {
    net::node n{sys, net::node_config{.keys = k, .trusted_keys = {"short"}}};
    FAIL() << "expected net_error";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("trusted_keys[0]"), std::string::npos) << e.what();
  }
}

TEST(net_curve, key_files_are_private_and_load_back) {
  char dir[] = "/tmp/troupe_keys_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string base = std::string{dir} + "/alpha";
  auto k = net::generate_key_pair();
  net::save_key_pair(k, base);
  struct stat st{};
  ASSERT_EQ(stat((base + ".key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  auto back = net::load_key_pair(base + ".key");
  EXPECT_EQ(back.public_key, k.public_key);
  EXPECT_EQ(back.secret_key, k.secret_key);
  EXPECT_EQ(net::load_public_key(base + ".pub"), k.public_key);
  chmod((base + ".key").c_str(), 0644);
  EXPECT_THROW(net::load_key_pair(base + ".key"), net::net_error);
  std::remove((base + ".key").c_str());
  std::remove((base + ".pub").c_str());
  rmdir(dir);
}

// ---------------------------------------------------------------- backpressure

TEST(net, a_slow_remote_receiver_holds_the_network_back) {
  pair_fixture f;
  constexpr std::int64_t n = 20'000;
  std::atomic<std::size_t> peak{0};
  std::promise<std::int64_t> done;
  f.server.publish(f.server_sys.spawn([&peak, &done](event_actor& self) {
    return behavior{[&self, &peak, &done, seen = std::int64_t{0}](std::int64_t) mutable {
      peak = std::max(peak.load(), self.mailbox_size());
      if (seen % 16 == 0) std::this_thread::sleep_for(100us);  // a slow consumer
      if (++seen == n) done.set_value(seen);
    }};
  }),
                   "slow");
  auto slow = f.client.remote_actor({f.endpoint, {}}, "slow", 5s);
  f.client_sys.spawn(
      [](event_actor& self, actor to) {
        for (std::int64_t i = 0; i < n; ++i) self.send(to, i);
      },
      slow);
  auto fut = done.get_future();
  ASSERT_EQ(fut.wait_for(60s), std::future_status::ready) << describe(f);
  EXPECT_EQ(fut.get(), n);  // nothing lost
  // The receiving node stops reading while the mailbox is over the soft
  // limit (1024): it overshoots by at most the frames already read.
  std::printf("peak mailbox of the slow receiver: %zu\n", peak.load());
  EXPECT_LT(peak.load(), 8U * 1024U);
}

TEST(net_curve, troupe_keygen_writes_a_private_key_file_and_a_public_one) {
  char dir[] = "/tmp/troupe_keygen_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string base = std::string{dir} + "/node";
  const std::string cmd = std::string{TROUPE_KEYGEN_BIN} + " " + base + " >/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  struct stat st{};
  ASSERT_EQ(stat((base + ".key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  auto keys = net::load_key_pair(base + ".key");
  EXPECT_EQ(net::load_public_key(base + ".pub"), keys.public_key);
  // No argument: usage on stderr, exit status 2.
  EXPECT_EQ(WEXITSTATUS(std::system((std::string{TROUPE_KEYGEN_BIN} + " 2>/dev/null").c_str())), 2);
  std::remove((base + ".key").c_str());
  std::remove((base + ".pub").c_str());
  rmdir(dir);
}

// ---------------------------------------------------------------- errors

TEST(net_errors, errors_cross_the_wire_with_their_category_and_an_unknown_one_still_reads) {
  const auto round_trip = [](const error& e) {
    std::string buf;
    net::writer w{buf, nullptr};
    net::codec<error>::write(w, e);
    net::reader r{buf.data(), buf.data() + buf.size(), nullptr};
    error got;
    net::codec<error>::read(r, got);
    EXPECT_EQ(r.left(), 0U);
    return got;
  };
  // net's own: the same category, code and message.
  auto e = round_trip(error{net::net_errc::remote_unreachable, "node closed"});
  EXPECT_EQ(e.category(), net::net_category());
  EXPECT_EQ(e, net::net_errc::remote_unreachable);
  EXPECT_EQ(e.code(), errc::remote_unreachable);  // the deprecated core code, for one release
  EXPECT_EQ(e.to_string(), "net.remote_unreachable: node closed");
  // A core error: a byte and the message, as before.
  std::string core;
  net::writer cw{core, nullptr};
  net::codec<error>::write(cw, error{errc::edge_lost, "x"});
  EXPECT_EQ(core.size(), 1U + 4U + 1U);
  EXPECT_EQ(round_trip(error{errc::edge_lost, "x"}), errc::edge_lost);
  // A category this process does not know (made, written, then gone): the
  // core code it stands for, with the category and code in the message.
  std::string buf;
  {
    static constexpr std::string_view texts[] = {"", "jammed", "broken"};
    static constexpr errc core_codes[] = {errc::runtime_error, errc::runtime_error, errc::actor_exited};
    const troupe::error_category gone{"net_test.gone", texts, core_codes};
    net::writer w{buf, nullptr};
    net::codec<error>::write(w, error{gone, 2, "it broke"});
    net::codec<error>::write(w, error{gone, 1});
  }
  net::reader r{buf.data(), buf.data() + buf.size(), nullptr};
  net::codec<error>::read(r, e);
  EXPECT_EQ(e.category(), troupe::core_category());
  EXPECT_EQ(e, errc::actor_exited);
  EXPECT_EQ(e.message(), "net_test.gone.broken: it broke");
  net::codec<error>::read(r, e);
  EXPECT_EQ(e, errc::runtime_error);
  EXPECT_EQ(e.to_string(), "runtime_error: net_test.gone.jammed");
  // A known category, but a code it does not name (another build): the same.
  e = round_trip(error{net::net_category(), 77, "?"});
  EXPECT_EQ(e, errc::runtime_error);
  EXPECT_EQ(e.message(), "net.77: ?");
  // Malformed: a core code that is not one, a module's error whose core
  // code is none; and every truncation.
  const std::string bad_core{"\xc8\0\0\0\0", 5};
  net::reader r1{bad_core.data(), bad_core.data() + bad_core.size(), nullptr};
  EXPECT_THROW(net::codec<error>::read(r1, e), net::decode_error);
  std::string module;
  net::writer mw{module, nullptr};
  net::codec<error>::write(mw, error{net::net_errc::operation_failed, "m"});
  std::string none_core = module;
  none_core[1 + 4 + 3 + 2] = '\0';  // 0xFF, "net", code: then the core code
  net::reader r2{none_core.data(), none_core.data() + none_core.size(), nullptr};
  EXPECT_THROW(net::codec<error>::read(r2, e), net::decode_error);
  for (std::size_t len = 0; len < module.size(); ++len) {
    net::reader rt{module.data(), module.data() + len, nullptr};
    EXPECT_THROW(net::codec<error>::read(rt, e), net::decode_error) << len;
  }
}

TEST(net_errors, a_monitor_reads_a_remote_actor_end_with_a_module_error_whole) {
  pair_fixture f;
  f.server.publish(f.server_sys.spawn([](event_actor& self) {
    return behavior{[&self](quit_atom) { self.quit(error{net::net_errc::operation_failed, "asked to"}); }};
  }),
                   "mortal_net");
  auto m = f.client.remote_actor({f.endpoint, {}}, "mortal_net", 5s);
  std::promise<error> down;
  f.client_sys.spawn(
      [&down](event_actor& self, actor target) {
        self.set_down_handler([&down](troupe::down_msg& d) { down.set_value(d.reason); });
        self.monitor(target);
        self.send(target, quit_atom{});
        return behavior{[](int) {}};
      },
      m);
  auto fut = down.get_future();
  ASSERT_EQ(fut.wait_for(10s), std::future_status::ready) << describe(f);
  auto e = fut.get();
  EXPECT_EQ(e.category(), net::net_category());
  EXPECT_EQ(e, net::net_errc::operation_failed);
  EXPECT_EQ(e.message(), "asked to");
}

TEST(net_errors, net_error_and_decode_error_are_troupe_exceptions) {
  try {
    (void)net::load_key_pair("/nonexistent/troupe_net_test.key");
    FAIL() << "no exception";
  } catch (const troupe::exception& e) {
    EXPECT_EQ(e.error(), net::net_errc::operation_failed);
    EXPECT_NE(e.error().message().find("/nonexistent/troupe_net_test.key"), std::string::npos) << e.error().message();
  }
  EXPECT_THROW((void)net::load_key_pair("/nonexistent/troupe_net_test.key"), std::runtime_error);
  EXPECT_THROW((void)net::load_key_pair("/nonexistent/troupe_net_test.key"), net::net_error);
  const std::string two{"ab"};
  try {
    net::reader r{two.data(), two.data() + two.size(), nullptr};
    (void)r.raw<std::uint32_t>("test value");
    FAIL() << "no exception";
  } catch (const troupe::exception& e) {
    EXPECT_EQ(e.error(), net::net_errc::malformed_message);
    EXPECT_NE(e.error().to_string().find("net.malformed_message: truncated test value"), std::string::npos)
        << e.error().to_string();
  }
  static_assert(std::is_base_of_v<std::runtime_error, net::decode_error>);
  static_assert(std::is_base_of_v<troupe::exception, net::decode_error>);
}

// ---------------------------------------------------------------- wire format

// The frame decoder alone (src/net/wire.hpp): the corpus of a session and of
// every record kind, and thousands of mutations of it, through the checks of
// the fuzz harness (tests/fuzz/net_wire_fuzz.cpp), here without libFuzzer so
// that every configuration (sanitizers included) runs them.
TEST(net_wire, the_layout_of_a_frame_is_the_documented_one) {
  // Byte by byte, as wire.hpp documents it (and tests/net_process_test.cpp's
  // corpus writes it): header, then u32 length + body per record.
  std::string manual;
  net::writer w{manual, nullptr};
  w.raw(std::uint32_t{0x31505254});  // "TRP1"
  w.raw(net::wire::version);         // version
  w.raw(std::uint8_t{0});
  w.raw(std::uint16_t{0});
  w.raw(std::uint64_t{1000});  // source incarnation
  w.raw(std::uint64_t{77});    // destination incarnation
  w.raw(std::uint64_t{2});     // sequence number
  for (std::int64_t v : {1, 2}) {
    w.raw(std::uint32_t{1 + 1 + 4 + 8 + 16 + 8 + 8 + 8});
    w.raw(std::uint8_t{5});   // data
    w.raw(std::uint8_t{0});   // flags
    w.raw(std::uint32_t{0});  // tag
    w.raw(std::uint64_t{42});
    w.raw(std::uint64_t{0});  // anonymous sender
    w.raw(std::uint64_t{0});
    w.raw(std::uint64_t{0});  // plain message
    w.raw(net::detail::name_hash("i64"));
    w.raw(v);
  }
  const auto frames = troupe_fuzz::session_frames(1000, 77, 42, 1, 2);
  ASSERT_EQ(frames.size(), 3U);
  EXPECT_EQ(frames[2], manual);
  net::wire::decoded_frame d;
  ASSERT_EQ(troupe_fuzz::check_frame(reinterpret_cast<const std::uint8_t*>(manual.data()), manual.size(), &d), "");
  EXPECT_EQ(d.malformed, 0U);
  EXPECT_EQ(d.f.header.src, 1000U);
  EXPECT_EQ(d.f.header.dst, 77U);
  EXPECT_EQ(d.f.header.seq, 2U);
  ASSERT_EQ(d.f.records.size(), 2U);
  EXPECT_EQ(std::get<net::wire::data_record>(d.f.records[1].body).head.dest, 42U);
}

TEST(net_wire, the_corpus_and_its_mutations_decode_or_are_refused) {
  const auto corpus = troupe_fuzz::wire_corpus();
  for (const auto& f : corpus) {
    net::wire::decoded_frame d;
    ASSERT_EQ(troupe_fuzz::check_frame(reinterpret_cast<const std::uint8_t*>(f.data()), f.size(), &d), "");
    EXPECT_TRUE(d.header_ok);
    EXPECT_EQ(d.malformed, 0U) << (d.errors.empty() ? "" : d.errors.front());
  }
  // Every truncation of every seed: refused unless it ends where a record ends.
  std::size_t truncations = 0;
  for (const auto& f : corpus) {
    const auto ends = troupe_fuzz::record_ends(f);
    ASSERT_EQ(ends.back(), f.size());
    for (std::size_t len = 0; len < f.size(); ++len) {
      net::wire::decoded_frame d;
      ASSERT_EQ(troupe_fuzz::check_frame(reinterpret_cast<const std::uint8_t*>(f.data()), len, &d), "") << len;
      const bool at_end = std::find(ends.begin(), ends.end(), len) != ends.end();
      EXPECT_EQ(d.malformed == 0, at_end) << "a frame of " << f.size() << " bytes cut at " << len;
      ++truncations;
    }
  }
  // Random mutations (a fixed seed: the same cases every run).
  std::mt19937_64 rng{20261125};
  const int cases = 6000;
  std::size_t refused = 0, accepted = 0;
  for (int i = 0; i < cases; ++i) {
    const auto& seed = corpus[static_cast<std::size_t>(i) % corpus.size()];
    auto m = troupe_fuzz::mutate(seed, static_cast<unsigned>(i / static_cast<int>(corpus.size())), rng, corpus);
    net::wire::decoded_frame d;
    ASSERT_EQ(troupe_fuzz::check_frame(reinterpret_cast<const std::uint8_t*>(m.data()), m.size(), &d), "") << i;
    (d.malformed > 0 ? refused : accepted) += 1;
  }
  std::printf("wire: %zu seeds, %zu truncations, %d mutations (%zu refused, %zu accepted)\n", corpus.size(),
              truncations, cases, refused, accepted);
  EXPECT_GT(refused, static_cast<std::size_t>(cases) / 2);
}

TEST(net_wire, values_of_user_types_and_their_mutations_decode_or_are_refused) {
  const auto seeds = troupe_fuzz::value_corpus();
  std::vector<std::string> corpus;
  for (const auto& [hash, bytes] : seeds) {
    corpus.push_back(bytes);
    const auto* t = net::detail::find_message(hash);
    ASSERT_NE(t, nullptr);
    net::reader r{bytes.data(), bytes.data() + bytes.size(), nullptr};
    EXPECT_NO_THROW((void)t->decode(r, actor{}, 0)) << t->name;  // every seed is accepted
  }
  std::mt19937_64 rng{20261128};
  for (int i = 0; i < 6000; ++i) {
    const auto& seed = corpus[static_cast<std::size_t>(i) % corpus.size()];
    auto m = troupe_fuzz::mutate(seed, static_cast<unsigned>(i / static_cast<int>(corpus.size())), rng, corpus);
    ASSERT_EQ(troupe_fuzz::check_values(reinterpret_cast<const std::uint8_t*>(m.data()), m.size()), "") << i;
  }
}

TEST(net_wire, every_malformed_frame_is_counted_by_the_node) {
  register_types();
  troupe_fuzz::register_wire_types();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  net::node n{sys, plain("target")};
  constexpr std::int64_t marker = 0x5a5a5a5a5a5a5a5a;
  auto got = std::make_shared<std::atomic<std::int64_t>>(0);
  auto markers = std::make_shared<std::atomic<std::int64_t>>(0);
  auto sink = sys.spawn([got, markers](event_actor&) {
    return behavior{[got, markers](std::int64_t v) {
      if (v == marker) ++*markers;
      else *got += v;
    }};
  });
  n.publish(sink, "sink");
  const auto refusals = [&n] {
    auto s = n.stats();
    return s.malformed + s.stale + s.peers_lost;
  };
  // The valid session: nothing refused, both values delivered.
  auto valid = troupe_fuzz::session_frames(1000, n.incarnation(), sink.id(), 1, 2);
  const auto before = refusals();
  net::detail::feed_frames_for_test(n, "valid", valid);
  EXPECT_EQ(refusals(), before);
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (got->load() != 3 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(got->load(), 3) << "the valid session was not delivered";

  // Sessions with one frame mutated: each frame the decoder refuses is
  // refused by the node too (counted malformed or stale, or the peer lost).
  std::mt19937_64 rng{20261126};
  const auto corpus = troupe_fuzz::wire_corpus();
  const int cases = 1500;
  int refused_frames = 0;
  for (int i = 0; i < cases; ++i) {
    auto frames = troupe_fuzz::session_frames(2000 + static_cast<std::uint64_t>(i), n.incarnation(), sink.id(), 0, 0);
    const std::size_t victim = static_cast<std::size_t>(i) % frames.size();
    frames[victim] = troupe_fuzz::mutate(frames[victim], static_cast<unsigned>(i / 3), rng, corpus);
    const std::string peer = "fuzz-" + std::to_string(i);
    for (std::size_t k = 0; k < frames.size(); ++k) {
      const auto d = net::wire::decode_frame(frames[k].data(), frames[k].size());
      const auto r0 = refusals();
      net::detail::feed_frames_for_test(n, peer, {frames[k]});
      if (d.malformed > 0) {
        ++refused_frames;
        EXPECT_GT(refusals(), r0) << "case " << i << ", frame " << k << " (" << d.errors.front() << ") was not counted";
      }
    }
  }
  std::printf("node: %d sessions, %d frames refused by the decoder\n", cases, refused_frames);
  EXPECT_GT(refused_frames, cases / 3);
  // The node still works: a fresh valid peer gets through.
  net::detail::feed_frames_for_test(n, "valid-again",
                                    troupe_fuzz::session_frames(999'999, n.incarnation(), sink.id(), marker, marker));
  const auto until2 = std::chrono::steady_clock::now() + 10s;
  while (markers->load() < 2 && std::chrono::steady_clock::now() < until2) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(markers->load(), 2);
}

namespace {
struct reply_of_no_registered_type {
  int v = 0;
};
}  // namespace

// The server cannot send a reply of a type it did not register: the
// requester gets an error naming the type at once, not a request timeout.
TEST(net, a_reply_of_an_unregistered_type_comes_back_as_an_error_naming_it) {
  pair_fixture f;
  f.server.publish(
      f.server_sys.spawn([](event_actor&) { return behavior{[](int x) { return reply_of_no_registered_type{x}; }}; }),
      "a");
  auto a = f.client.remote_actor({f.endpoint, {}}, "a", 5s);
  troupe::scoped_actor self{f.client_sys};
  error got;
  self->request(a, 60s, 7).receive([](int) {}, [&](error& e) { got = e; });
  EXPECT_NE(got.code(), errc::request_timeout) << got.to_string();
  EXPECT_NE(got.message().find("not registered"), std::string::npos) << got.to_string();
  EXPECT_NE(got.message().find("reply_of_no_registered_type"), std::string::npos) << got.to_string();
  EXPECT_EQ(got.message().find("St5tuple"), std::string::npos) << got.to_string();  // not mangled
  EXPECT_GE(f.server.stats().unsendable, 1U);
}

// A message too big for a frame is refused at the sender, naming its size
// and the limit; the connection stays, and so do the other messages on it,
// including a big one that fits a frame only alone.
TEST(net, a_message_over_the_frame_limit_is_refused_at_the_sender_and_the_link_stays) {
  auto sc = plain("server");
  auto cc = plain("client");
  sc.max_frame_bytes = cc.max_frame_bytes = 256 * 1024;
  pair_fixture f{sc, cc};
  f.server.publish(f.server_sys.spawn([](event_actor&) {
    return behavior{[](const std::string& s) { return static_cast<std::int64_t>(s.size()); }, [](int x) { return x; }};
  }),
                   "sizer");
  auto sizer = f.client.remote_actor({f.endpoint, {}}, "sizer", 5s);
  troupe::scoped_actor self{f.client_sys};
  error refused;
  self->request(sizer, 30s, std::string(300 * 1024, 'x')).receive([](std::int64_t) {}, [&](error& e) { refused = e; });
  EXPECT_NE(refused.message().find("over max_frame_bytes (262144)"), std::string::npos) << refused.to_string();
  EXPECT_NE(refused.message().find("307"), std::string::npos) << refused.to_string();  // 307,2xx bytes
  // Small messages queued before a big one that fits alone, then more.
  for (int i = 0; i < 10; ++i) self->send(sizer, i);
  std::int64_t size = 0;
  self->request(sizer, 30s, std::string(200 * 1024, 'y'))
      .receive([&](std::int64_t n) { size = n; }, [](error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(size, 200 * 1024);
  int answers = 0;
  for (int i = 0; i < 10; ++i) answers += self->receive_for(10s, [](int) {}) ? 1 : 0;
  EXPECT_EQ(answers, 10);
  int echoed = 0;
  self->request(sizer, 30s, 5).receive([&](int v) { echoed = v; }, [](error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(echoed, 5);
  EXPECT_EQ(f.client.stats().peers_lost, 0U) << describe(f);
}

// Handles of every kind are registrable side by side and cross as what they
// are: an untyped handle and handles of two typed interfaces.
TEST(net, untyped_and_typed_handles_of_two_interfaces_are_registered_side_by_side) {
  using stopper = troupe::typed_actor<void(quit_atom)>;
  pair_fixture f;  // registers the atoms
  net::add_message<troupe::actor>();
  net::add_message<calculator>();
  net::add_message<stopper>();
  net::add_message<calculator, stopper>();
  calculator calc = f.server_sys.spawn(
      [](event_actor&) -> calculator::behavior_type { return {[](add_atom, int a, int b) { return a + b; }}; });
  // The client sends the server a calculator and a stopper; the server's
  // actor asks the calculator across the wire and answers with the sum.
  f.server.publish(f.server_sys.spawn([](event_actor& self) {
    return behavior{[&self](calculator c, stopper) {
      auto rp = self.make_response_promise();
      self.request(c, 10s, add_atom{}, 40, 2)
          .then([rp](int v) mutable { rp.deliver(v); }, [rp](error& e) mutable { rp.deliver(e); });
      return rp;
    }};
  }),
                   "asker");
  (void)calc;
  calculator local = f.client_sys.spawn(
      [](event_actor&) -> calculator::behavior_type { return {[](add_atom, int a, int b) { return a * b; }}; });
  stopper quiet = f.client_sys.spawn([](event_actor&) -> stopper::behavior_type { return {[](quit_atom) {}}; });
  auto asker = f.client.remote_actor({f.endpoint, {}}, "asker", 5s);
  troupe::scoped_actor self{f.client_sys};
  int got = 0;
  self->request(asker, 30s, local, quiet).receive([&](int v) { got = v; }, [](error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(got, 80);  // 40 * 2: the client's calculator, reached through the server
}

// A node's log lines (node_core::log: a lost peer, plaintext mode, I/O
// errors) go where node_config::log says, not to stderr.
TEST(net, log_lines_go_to_the_configured_logger) {
  auto lines = std::make_shared<std::vector<std::string>>();
  auto mtx = std::make_shared<std::mutex>();
  auto cc = plain("client");
  cc.log = [lines, mtx](const std::string& l) {
    std::lock_guard<std::mutex> g{*mtx};
    lines->push_back(l);
  };
  testing::internal::CaptureStderr();
  {
    troupe::actor_system server_sys{troupe::config{.workers = 2}};
    net::node server{server_sys, plain("server")};
    troupe::actor_system client_sys{troupe::config{.workers = 2}};
    net::node client{client_sys, cc};
    register_types();
    const auto endpoint = server.listen("tcp://127.0.0.1:*");
    server.publish(server_sys.spawn([](event_actor&) { return behavior{[](int x) { return x; }}; }), "a");
    auto a = client.remote_actor({endpoint, {}}, "a", 5s);
    troupe::scoped_actor self{client_sys};
    int got = 0;
    self->request(a, 10s, 4).receive([&](int v) { got = v; }, [](error& e) { FAIL() << e.to_string(); });
    EXPECT_EQ(got, 4);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  std::lock_guard<std::mutex> g{*mtx};
  ASSERT_FALSE(lines->empty());
  EXPECT_EQ(lines->front(),
            "troupe::net: node 'client': runs WITHOUT encryption or authentication (security::plaintext)");
  EXPECT_EQ(err.find("node 'client'"), std::string::npos) << err;
  EXPECT_NE(err.find("node 'server'"), std::string::npos) << err;  // a node without a logger writes to stderr
}
