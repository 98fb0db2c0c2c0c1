// The membership registry (troupe::membership) against a real 3-member etcd
// cluster that the tests start on loopback (etcd_cluster.hpp): members
// register, are found and listed; a killed member's lease expires and the
// others see it leave; the registry goes on when an etcd member is killed;
// two troupe::net nodes find each other through it and talk; a split graph
// takes its peers from it; troupe-members lists a cluster and refuses bad
// flags. The membership_config tests need no etcd. Without Debian's
// etcd-server the others are skipped, with the reason.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "child_process.hpp"
#include "connector_support.hpp"
#include "etcd_cluster.hpp"
#include "troupe/net/membership.hpp"
#include "troupe/net/split.hpp"

using namespace std::chrono_literals;
namespace net = troupe::net;
namespace fs = std::filesystem;

namespace {

constexpr auto ttl = std::chrono::seconds{2};  // etcd's minimum with its default election timeout
constexpr auto patience = 30s;                 // the bound of every wait for an event

std::string self_exe() { return fs::read_symlink("/proc/self/exe").string(); }

/// An etcd cluster's directory, of this process alone: ctest runs the tests
/// as processes side by side, each with its clusters.
fs::path etcd_dir(const std::string& name) {
  return connector_support::fresh_dir("etcd-", name + "-" + std::to_string(::getpid()));
}

/// A fresh directory for a test's files, removed when the test ends.
struct scratch {
  fs::path path;
  explicit scratch(const std::string& name) : path{etcd_dir(name)} {}
  ~scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  scratch(const scratch&) = delete;
  scratch& operator=(const scratch&) = delete;
};

/// A registry config for `cluster` on `urls`, with a short lease, its log
/// lines kept (a test may look at them).
struct logged {
  std::mutex mtx;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& l) {
      std::lock_guard<std::mutex> g{mtx};
      lines.push_back(l);
    };
  }
};

net::registry_config config_for(const std::vector<std::string>& urls, const std::string& cluster) {
  return {.etcd = urls, .cluster = cluster, .lease_ttl = ttl, .timeout = 5s, .watch_idle = 3s};
}

net::member member_named(const std::string& name, int port, std::uint64_t incarnation = 1) {
  return {.name = name, .address = {"tcp://127.0.0.1:" + std::to_string(port), ""}, .incarnation = incarnation};
}

/// The events a watch delivered, waited for with a bound.
struct events {
  std::mutex mtx;
  std::condition_variable cv;
  std::deque<net::member_event> all;
  std::function<void(const net::member_event&)> sink() {
    return [this](const net::member_event& e) {
      {
        std::lock_guard<std::mutex> g{mtx};
        all.push_back(e);
      }
      cv.notify_all();
    };
  }
  /// Whether `change` of `name` came `times` times within `limit` (counting every event so far).
  bool wait_for(net::member_change change, const std::string& name, std::size_t times = 1,
                std::chrono::milliseconds limit = patience) {
    std::unique_lock<std::mutex> lk{mtx};
    return cv.wait_for(lk, limit, [&] { return count_locked(change, name) >= times; });
  }
  std::size_t count(net::member_change change, const std::string& name) {
    std::lock_guard<std::mutex> g{mtx};
    return count_locked(change, name);
  }

  /// Every event so far, one per line (for a failure's message).
  std::string describe() {
    std::lock_guard<std::mutex> g{mtx};
    std::string s;
    for (const auto& e : all) s += std::string{net::to_string(e.change)} + " " + e.who.name + "\n";
    return s;
  }

 private:
  std::size_t count_locked(net::member_change change, const std::string& name) const {
    return static_cast<std::size_t>(std::count_if(
        all.begin(), all.end(), [&](const net::member_event& e) { return e.change == change && e.who.name == name; }));
  }
};

// --------------------------------------------------------- no etcd needed

TEST(membership_config, bad_settings_are_named) {
  const auto refused = [](net::registry_config c, const std::string& what) {
    try {
      net::registry r{std::move(c)};
      ADD_FAILURE() << "accepted; expected an error naming " << what;
    } catch (const net::net_error& e) {
      EXPECT_NE(std::string{e.what()}.find(what), std::string::npos) << e.what();
    }
  };
  refused({}, "etcd is empty");
  refused({.etcd = {"127.0.0.1:2379"}}, "'127.0.0.1:2379' is not an etcd client URL");
  refused({.etcd = {"http://127.0.0.1:99999"}}, "port");
  refused({.etcd = {"http://127.0.0.1:2379/v3"}}, "only a scheme, a host and a port");
  refused({.etcd = {"http://127.0.0.1:2379"}, .cluster = "a/b"}, "holds '/'");
  refused({.etcd = {"http://127.0.0.1:2379"}, .cluster = ""}, "cluster name is empty");
  refused({.etcd = {"http://127.0.0.1:2379"}, .prefix = "troupe"}, "prefix 'troupe'");
  refused({.etcd = {"http://127.0.0.1:2379"}, .lease_ttl = 0s}, "lease_ttl");
  refused({.etcd = {"http://127.0.0.1:2379"}, .timeout = 0ms}, "timeout");
}

TEST(membership_config, a_bad_member_is_refused_before_etcd_is_asked) {
  // Nothing listens on the URL: each of these fails on its input, at once.
  net::registry reg{{.etcd = {"http://127.0.0.1:1"}, .timeout = 300ms}};
  const auto refused = [&reg](const net::member& m, const std::string& what) {
    try {
      reg.join(m);
      ADD_FAILURE() << "joined; expected an error naming " << what;
    } catch (const net::net_error& e) {
      EXPECT_NE(std::string{e.what()}.find(what), std::string::npos) << e.what();
    }
  };
  refused(member_named("a b", 7000), "holds ' '");
  refused({.name = "a", .address = {"udp://127.0.0.1:7000", ""}}, "tcp://");
  refused({.name = "a", .address = {"tcp://127.0.0.1:*", ""}}, "no port yet");
  refused({.name = "a", .address = {"tcp://127.0.0.1:7000", "short"}}, "not a Z85 CURVE key");
  EXPECT_FALSE(reg.joined());
}

TEST(membership_config, an_unreachable_etcd_is_named_within_the_timeout) {
  net::registry reg{{.etcd = {"http://127.0.0.1:1", "http://127.0.0.1:2"}, .timeout = 500ms}};
  const auto t0 = std::chrono::steady_clock::now();
  try {
    (void)reg.members();
    FAIL() << "expected net_error";
  } catch (const net::net_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no etcd member answered"), std::string::npos) << what;
    EXPECT_NE(what.find("http://127.0.0.1:1"), std::string::npos) << what;
    EXPECT_NE(what.find("http://127.0.0.1:2"), std::string::npos) << what;
  }
  EXPECT_THROW(reg.join(member_named("a", 7000)), net::net_error);
  EXPECT_THROW((void)reg.lookup("a"), net::net_error);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s);  // bounded: not a hang (no timing claim)
}

/// A TCP server on 127.0.0.1 that answers every request with `status`
/// ("404 Not Found") and `body`.
class fake_server {
 public:
  fake_server(const std::string& status, const std::string& body)
      : answer_{"HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) +
                "\r\nConnection: close\r\n\r\n" + body} {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error{"fake_server: cannot listen"};
    url_ = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
    thread_ = std::thread{[this] { serve(); }};
  }
  ~fake_server() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  fake_server(const fake_server&) = delete;
  fake_server& operator=(const fake_server&) = delete;
  const std::string& url() const { return url_; }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      char buf[4096];
      pollfd q{c, POLLIN, 0};
      if (::poll(&q, 1, 1000) > 0) (void)::recv(c, buf, sizeof buf, 0);
      (void)::send(c, answer_.data(), answer_.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }
  std::string answer_, url_;
  int fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(membership_config, an_answer_that_is_not_etcd_is_named) {
  fake_server html{"404 Not Found", "<html>not here</html>"};
  net::registry reg{{.etcd = {html.url()}, .timeout = 500ms}};
  try {
    (void)reg.members();
    FAIL() << "expected net_error";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("HTTP 404, not etcd's JSON: '<html>not here</html>'"), std::string::npos)
        << e.what();
  }
  // JSON, but not the shape of a range's answer.
  fake_server odd{"200 OK", R"({"kvs":"not a list","x":1})"};
  net::registry reg2{{.etcd = {odd.url()}, .timeout = 500ms}};
  try {
    (void)reg2.members();
    FAIL() << "expected net_error";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("kvs that are not a list"), std::string::npos) << e.what();
  }
}

// --------------------------------------------------------- against etcd

/// One 3-member etcd cluster for the tests of this suite; each test uses a
/// cluster name of its own in it.
class membership : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!etcd_support::cluster::installed()) return;
    try {
      etcd_ = std::make_unique<etcd_support::cluster>(etcd_dir("shared"), 3);
    } catch (const std::exception& e) {
      start_error_ = e.what();  // each test fails with it (an exception here would skip them)
    }
  }
  static void TearDownTestSuite() { etcd_.reset(); }
  void SetUp() override {
    if (!etcd_support::cluster::installed())
      GTEST_SKIP() << "etcd is not installed (" << etcd_support::cluster::binary
                   << "; Debian's etcd-server, which scripts/setup installs)";
    if (!etcd_) FAIL() << "the etcd cluster did not start: " << start_error_;
  }
  static const std::vector<std::string>& urls() { return etcd_->urls(); }
  static std::string cluster_name() { return ::testing::UnitTest::GetInstance()->current_test_info()->name(); }
  static net::registry_config cfg() { return config_for(urls(), cluster_name()); }
  /// The etcd URLs, comma-separated (for the command lines).
  static std::string url_list() {
    std::string list;
    for (const auto& u : urls()) list += (list.empty() ? "" : ",") + u;
    return list;
  }

  static std::unique_ptr<etcd_support::cluster> etcd_;
  static std::string start_error_;
};
std::unique_ptr<etcd_support::cluster> membership::etcd_;
std::string membership::start_error_;

TEST_F(membership, members_register_are_found_by_name_and_listed) {
  net::registry a{cfg()}, b{cfg()}, reader{cfg()};
  auto alpha = member_named("alpha", 7001, 0x1234);
  alpha.address.public_key = net::generate_key_pair().public_key;
  alpha.attributes = {{"zone", "a"}, {"role", "store"}};
  a.join(alpha);
  b.join(member_named("beta", 7002, 0x99));
  EXPECT_TRUE(a.joined());

  auto found = reader.lookup("alpha");
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->name, "alpha");
  EXPECT_EQ(found->address.endpoint, "tcp://127.0.0.1:7001");
  EXPECT_EQ(found->address.public_key, alpha.address.public_key);
  EXPECT_EQ(found->incarnation, 0x1234u);
  EXPECT_EQ(found->attributes, alpha.attributes);
  EXPECT_FALSE(reader.lookup("gamma").has_value());

  const auto all = reader.members();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "alpha");
  EXPECT_EQ(all[1].name, "beta");
  EXPECT_EQ(all[1].incarnation, 0x99u);

  // Another cluster in the same etcd sees none of them.
  net::registry other{config_for(urls(), cluster_name() + "-other")};
  EXPECT_TRUE(other.members().empty());

  // A name is held by one member at a time.
  net::registry c{cfg()};
  try {
    c.join(member_named("alpha", 7003));
    FAIL() << "a second 'alpha' joined";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("'alpha' is already a member"), std::string::npos) << e.what();
    EXPECT_NE(std::string{e.what()}.find("tcp://127.0.0.1:7001"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(c.joined());
  EXPECT_THROW(a.join(member_named("alpha2", 7004)), net::net_error);  // one member per registry

  // The entries outlive several lease periods: the keep-alives hold them.
  std::this_thread::sleep_for(3 * ttl);
  EXPECT_EQ(reader.members().size(), 2u);

  a.leave();
  EXPECT_FALSE(a.joined());
  EXPECT_FALSE(reader.lookup("alpha").has_value());
  c.join(member_named("alpha", 7003));  // free again
  EXPECT_EQ(reader.wait_for("alpha", 5s).address.endpoint, "tcp://127.0.0.1:7003");
}

TEST_F(membership, wait_for_names_the_members_that_did_not_come) {
  net::registry a{cfg()}, reader{cfg()};
  a.join(member_named("here", 7001));
  try {
    (void)reader.wait_for(std::vector<std::string>{"here", "missing"}, 500ms);
    FAIL() << "expected net_error";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("'missing' did not register"), std::string::npos) << e.what();
    EXPECT_EQ(std::string{e.what()}.find("'here'"), std::string::npos) << e.what();
  }
  auto later = std::async(std::launch::async,
                          [&] { return reader.wait_for(std::vector<std::string>{"here", "late"}, patience); });
  net::registry b{cfg()};
  b.join(member_named("late", 7002));
  const auto both = later.get();
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[1].address.endpoint, "tcp://127.0.0.1:7002");
}

TEST_F(membership, a_watch_sees_members_join_and_leave) {
  net::registry a{cfg()}, watcher{cfg()};
  a.join(member_named("first", 7001));
  events seen;
  auto sub = watcher.watch(seen.sink());
  EXPECT_TRUE(seen.wait_for(net::member_change::joined, "first"));  // present at the start
  net::registry b{cfg()};
  b.join(member_named("second", 7002));
  EXPECT_TRUE(seen.wait_for(net::member_change::joined, "second"));
  b.leave();
  EXPECT_TRUE(seen.wait_for(net::member_change::left, "second"));
  sub.cancel();
  EXPECT_FALSE(sub);
  EXPECT_EQ(seen.count(net::member_change::joined, "second"), 1u);
  EXPECT_EQ(seen.count(net::member_change::left, "first"), 0u);
}

TEST_F(membership, a_watch_delivers_to_an_actor) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  std::promise<net::member_event> got;
  auto collector = sys.spawn([&got](troupe::event_actor&) {
    return troupe::behavior{[&got](const net::member_event& e) {
      if (e.who.name == "told") got.set_value(e);
    }};
  });
  net::registry watcher{cfg()}, a{cfg()};
  {
    auto sub = watcher.watch(sys, collector);
    a.join(member_named("told", 7005));
    auto f = got.get_future();
    ASSERT_EQ(f.wait_for(patience), std::future_status::ready);
    const auto e = f.get();
    EXPECT_EQ(e.change, net::member_change::joined);
    EXPECT_EQ(e.who.address.endpoint, "tcp://127.0.0.1:7005");
  }
  sys.send_exit(collector, troupe::error{troupe::errc::user_shutdown, "done"});
}

/// The member child (see main): joins `name` and keeps it alive until killed.
int member_child(const std::string& urls, const std::string& cluster, const std::string& name) {
  ::alarm(120);  // never outlives its test by long
  std::vector<std::string> list;
  for (std::size_t from = 0;;) {
    const auto comma = urls.find(',', from);
    list.push_back(urls.substr(from, comma - from));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  try {
    net::registry reg{config_for(list, cluster)};
    reg.join(member_named(name, 7100, 0xc41d));
    std::printf("joined\n");
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(1s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "member child: %s\n", e.what());
    return 1;
  }
}

/// A member child (see main) that joins as `name`, and a watch of its
/// cluster in this process.
struct watched_child {
  scratch files;
  net::registry watcher;
  events seen;
  net::subscription sub;
  child_process::process child;
  watched_child(const std::string& urls, const net::registry_config& cfg, const std::string& name)
      : files{name + "-" + cfg.cluster},
        watcher{cfg},
        sub{watcher.watch(seen.sink())},
        child{{self_exe(), "--member-child", urls, cfg.cluster, name}, files.path / "out", files.path / "err"} {}
  /// Whether it joined: its entry seen here, and its join() returned there
  /// (the entry is seen a little earlier, while the answer is on its way).
  bool joined(const std::string& name) {
    if (!seen.wait_for(net::member_change::joined, name)) return false;
    for (int i = 0; i < 3000; ++i) {  // 30 s
      if (child_process::slurp(files.path / "out").find("joined") != std::string::npos) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }
  std::string err() const { return child_process::slurp(files.path / "err"); }
};

TEST_F(membership, a_killed_member_is_seen_leaving_when_its_lease_expires) {
  watched_child w{url_list(), cfg(), "victim"};
  ASSERT_TRUE(w.joined("victim")) << "the child did not join: " << w.err();
  std::this_thread::sleep_for(2 * ttl);  // alive through lease periods: its keep-alives come
  EXPECT_EQ(w.seen.count(net::member_change::left, "victim"), 0u);
  w.child.kill(SIGKILL);  // no leave: only the lease's expiry tells
  ASSERT_TRUE(w.seen.wait_for(net::member_change::left, "victim"));
  {
    std::lock_guard<std::mutex> g{w.seen.mtx};
    const auto& last = w.seen.all.back();
    EXPECT_EQ(last.who.incarnation, 0xc41du);  // the member as it was
  }
  EXPECT_FALSE(w.watcher.lookup("victim").has_value());
}

TEST_F(membership, a_frozen_member_leaves_and_joins_again_when_it_resumes) {
  watched_child w{url_list(), cfg(), "sleeper"};
  ASSERT_TRUE(w.joined("sleeper")) << "the child did not join: " << w.err();
  auto& child = w.child;
  auto& seen = w.seen;
  child.signal(SIGSTOP);  // frozen: its connections stay open, its keep-alives stop
  const bool left = seen.wait_for(net::member_change::left, "sleeper");
  child.signal(SIGCONT);
  ASSERT_TRUE(left);
  // Resumed, its registry finds its lease gone and registers it again.
  ASSERT_TRUE(seen.wait_for(net::member_change::joined, "sleeper", 2)) << w.err();
  const auto back = w.watcher.lookup("sleeper");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->incarnation, 0xc41du);
  for (int i = 0; i < 1000 && w.err().find("registered again") == std::string::npos; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_NE(w.err().find("had expired"), std::string::npos) << w.err();
}

TEST_F(membership, records_that_are_not_members_are_named_and_left_out) {
  if (::access("/usr/bin/etcdctl", X_OK) != 0) GTEST_SKIP() << "etcdctl is not installed (Debian's etcd-client)";
  const scratch files{"ctl-" + cluster_name()};
  const auto& dir = files.path;
  logged log;
  auto c = cfg();
  c.log = log.sink();
  net::registry reg{c}, good{cfg()};
  good.join(member_named("good", 7001));
  events seen;
  auto sub = reg.watch(seen.sink());
  ASSERT_TRUE(seen.wait_for(net::member_change::joined, "good"));
  const auto put = [&](const std::string& key, const std::string& value) {
    child_process::process p{
        {"/usr/bin/etcdctl", "--endpoints", urls()[0], "put", key, value}, dir / "out", dir / "err"};
    ASSERT_EQ(p.wait(20s), 0) << child_process::slurp(dir / "err");
  };
  const std::string members = "/troupe/" + cluster_name() + "/members/";
  put(members + "broken", "{not json");
  put(members + "future", R"({"version":2,"endpoint":"tcp://127.0.0.1:1"})");
  // Written by hand with the same incarnation: an update.
  put(members + "good",
      R"({"version":1,"endpoint":"tcp://127.0.0.1:7009","public_key":"","incarnation":"0000000000000001"})");
  ASSERT_TRUE(seen.wait_for(net::member_change::updated, "good"));
  const auto all = reg.members();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].address.endpoint, "tcp://127.0.0.1:7009");
  try {
    (void)reg.lookup("broken");
    FAIL() << "expected net_error";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("'broken'"), std::string::npos) << e.what();
    EXPECT_NE(std::string{e.what()}.find("not a member record (not JSON)"), std::string::npos) << e.what();
  }
  try {
    (void)reg.lookup("future");
    FAIL() << "expected net_error";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("record version 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(seen.count(net::member_change::joined, "broken"), 0u);
  std::lock_guard<std::mutex> g{log.mtx};
  EXPECT_TRUE(std::any_of(log.lines.begin(), log.lines.end(),
                          [](const std::string& l) { return l.find("'broken'") != std::string::npos; }));
}

TEST_F(membership, two_nodes_find_each_other_and_exchange_a_request) {
  net::add_message<int>();
  const auto ka = net::generate_key_pair(), kb = net::generate_key_pair();
  troupe::actor_system sys_a{troupe::config{.workers = 1}}, sys_b{troupe::config{.workers = 1}};
  net::node node_a{sys_a, {.keys = ka, .trusted_keys = {kb.public_key}, .heartbeat_timeout = 5s, .name = "a"}};
  net::node node_b{sys_b, {.keys = kb, .trusted_keys = {ka.public_key}, .heartbeat_timeout = 5s, .name = "b"}};
  node_a.publish(sys_a.spawn([](troupe::event_actor&) { return troupe::behavior{[](int x) { return x * 2; }}; }),
                 "doubler");
  net::registry reg_a{cfg()}, reg_b{cfg()};
  reg_a.join({.name = "node-a",
              .address = {node_a.listen("tcp://127.0.0.1:*"), ka.public_key},
              .incarnation = node_a.incarnation()});

  const auto where = reg_b.wait_for("node-a", patience);  // B knows only the name
  EXPECT_EQ(where.incarnation, node_a.incarnation());
  auto doubler = node_b.remote_actor(where.address, "doubler", 10s);
  troupe::scoped_actor self{sys_b};
  int got = 0;
  self->request(doubler, 10s, 21).receive([&](int v) { got = v; }, [](troupe::error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(got, 42);
}

// A node that follows the registry retires a member the registry saw
// leave, although that member's node still runs and answers (here it left
// the registry; a lease that expired ends the same way), and takes it back
// when it registers again.
TEST_F(membership, a_node_following_the_registry_retires_a_member_that_left) {
  net::add_message<int>();
  troupe::actor_system sys_a{troupe::config{.workers = 1}}, sys_b{troupe::config{.workers = 1}};
  const auto plain = [](const char* name) {
    net::node_config c;
    c.security = net::security::plaintext;
    c.name = name;
    c.log = [](const std::string&) {};
    return c;
  };
  net::node node_a{sys_a, plain("a")};
  net::node node_b{sys_b, plain("b")};
  node_a.publish(sys_a.spawn([](troupe::event_actor&) { return troupe::behavior{[](int x) { return x * 2; }}; }),
                 "doubler");
  const net::member a{
      .name = "node-a", .address = {node_a.listen("tcp://127.0.0.1:*"), ""}, .incarnation = node_a.incarnation()};
  net::registry reg_a{cfg()}, reg_b{cfg()};
  events seen;
  auto watching = reg_b.watch(seen.sink());
  auto following = reg_b.follow(node_b);
  reg_a.join(a);

  const auto where = reg_b.wait_for("node-a", patience);
  auto doubler = node_b.remote_actor(where.address, "doubler", 10s);
  troupe::scoped_actor self{sys_b};
  const auto ask = [&] {
    int got = 0;
    std::string failed;
    self->request(doubler, 10s, 21).receive([&](int v) { got = v; }, [&](troupe::error& e) { failed = e.to_string(); });
    return failed.empty() ? std::to_string(got) : failed;
  };
  ASSERT_EQ(ask(), "42");
  self->monitor(doubler);

  reg_a.leave();  // node A runs on, but the registry says it is gone
  ASSERT_TRUE(seen.wait_for(net::member_change::left, "node-a"));
  std::string why;
  self->receive_for(patience, [&](troupe::down_msg& d) { why = d.reason.to_string(); });
  EXPECT_NE(why.find("left the cluster"), std::string::npos) << why;
  EXPECT_EQ(node_b.stats().peers_retired, 1u);
  const auto refused = ask();
  EXPECT_NE(refused, "42");
  try {  // a new lookup reaches node A, whose incarnation is retired here
    (void)node_b.remote_actor(where.address, "doubler", 10s);
    FAIL() << "a lookup reached a retired peer";
  } catch (const net::net_error& e) {
    EXPECT_NE(std::string{e.what()}.find("was retired"), std::string::npos) << e.what();
  }

  reg_a.join(a);  // back in the registry, the same incarnation
  ASSERT_TRUE(seen.wait_for(net::member_change::joined, "node-a", 2));
  std::string again;
  for (int i = 0; i < 100 && again != "42"; ++i) {  // readmit_peer runs on B's I/O thread: a moment later
    try {
      doubler = node_b.remote_actor(where.address, "doubler", 10s);
      again = ask();
    } catch (const net::net_error& e) {
      again = e.what();
      std::this_thread::sleep_for(50ms);
    }
  }
  EXPECT_EQ(again, "42");
}

TEST_F(membership, a_split_graph_takes_its_peers_from_the_registry) {
  troupe::actor_system sys0{troupe::config{.workers = 2}}, sys1{troupe::config{.workers = 2}};
  const auto plain = [](const char* name) {
    return net::node_config{
        .security = net::security::plaintext, .trusted_keys = {}, .heartbeat_timeout = 5s, .name = name};
  };
  net::node node0{sys0, plain("rank0")}, node1{sys1, plain("rank1")};
  const net::remote_address any{"tcp://127.0.0.1:*", ""};
  net::cluster c0{sys0, node0, {.rank = 0, .peers = {any, any}, .connect_timeout = 20s}};
  net::cluster c1{sys1, node1, {.rank = 1, .peers = {any, any}, .connect_timeout = 20s}};
  const std::vector<std::string> names{"rank-0", "rank-1"};
  net::registry r0{cfg()}, r1{cfg()};
  r0.join({.name = names[0], .address = c0.self_address(), .incarnation = node0.incarnation()});
  auto later = std::async(std::launch::async, [&] {
    r1.join({.name = names[1], .address = c1.self_address(), .incarnation = node1.incarnation()});
    net::peers_from_registry(c1, r1, names, patience);
  });
  net::peers_from_registry(c0, r0, names, patience);
  later.get();
  EXPECT_EQ(c0.config().peers[1].endpoint, c1.self_address().endpoint);
  EXPECT_EQ(c1.config().peers[0].endpoint, c0.self_address().endpoint);
  // A wrong count of names is named.
  EXPECT_THROW(net::peers_from_registry(c0, r0, {"rank-0"}, 1s), net::net_error);

  std::atomic<std::int64_t> sum{0}, count{0};
  auto graph = troupe::pipeline{troupe::stream::source([i = std::int64_t{0}]() mutable -> std::optional<std::int64_t> {
                                  if (i == 1000) return std::nullopt;
                                  return i++;
                                }),
                                troupe::stream::sink([&](std::int64_t v) {
                                  sum += v;
                                  ++count;
                                })};
  auto g1 = std::async(std::launch::async, [&] { return net::split(c1, graph, net::stage_ranks("0;1")); });
  auto g0 = net::split(c0, graph, net::stage_ranks("0;1"));
  auto part1 = g1.get();
  EXPECT_EQ(connector_support::failure_of(g0, 60s), "");
  EXPECT_EQ(connector_support::failure_of(part1, 60s), "");
  EXPECT_EQ(count.load(), 1000);
  EXPECT_EQ(sum.load(), 999 * 1000 / 2);
}

/// troupe-members with `args`; its exit code, stdout and stderr.
struct run_result {
  int code;
  std::string out, err;
};
run_result members_cli(const std::vector<std::string>& args, const fs::path& dir) {
  std::vector<std::string> argv{TROUPE_MEMBERS_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  fs::remove(dir / "cli.out");
  fs::remove(dir / "cli.err");
  child_process::process p{argv, dir / "cli.out", dir / "cli.err"};
  const int code = p.wait(60s);
  return {code, child_process::slurp(dir / "cli.out"), child_process::slurp(dir / "cli.err")};
}

TEST_F(membership, the_cli_lists_the_members_and_refuses_bad_flags) {
  const scratch files{"cli-" + cluster_name()};
  const auto& dir = files.path;
  net::registry a{cfg()}, b{cfg()};
  auto one = member_named("one", 7001, 0xab);
  one.attributes = {{"zone", "z1"}};
  a.join(one);
  b.join(member_named("two", 7002, 0xcd));
  const std::string list = url_list();

  auto r = members_cli({"--etcd", list, "--cluster", cluster_name()}, dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "one tcp://127.0.0.1:7001 00000000000000ab - zone=z1\n"
            "two tcp://127.0.0.1:7002 00000000000000cd - -\n");

  r = members_cli({"--etcd", list, "--cluster", cluster_name() + "-empty"}, dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("has no members"), std::string::npos) << r.err;

  r = members_cli({"--cluster", "x"}, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--etcd is missing"), std::string::npos) << r.err;
  r = members_cli({"--etcd", list, "--frobnicate"}, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown flag '--frobnicate'"), std::string::npos) << r.err;
  r = members_cli({"--etcd"}, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--etcd needs a value"), std::string::npos) << r.err;
  r = members_cli({"--etcd", list, "--timeout", "soon"}, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--timeout 'soon'"), std::string::npos) << r.err;
  r = members_cli({"--etcd", "ftp://127.0.0.1:1"}, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("'ftp://127.0.0.1:1' is not an etcd client URL"), std::string::npos) << r.err;
  r = members_cli({"--etcd", "http://127.0.0.1:1", "--timeout", "300"}, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no etcd member answered"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("http://127.0.0.1:1"), std::string::npos) << r.err;
  r = members_cli({"--help"}, dir);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("usage: troupe-members"), std::string::npos);
}

TEST_F(membership, the_cli_watches_until_told_to_stop) {
  const scratch files{"cliw-" + cluster_name()};
  const auto& dir = files.path;
  net::registry a{cfg()};
  a.join(member_named("early", 7001));
  child_process::process p{
      {TROUPE_MEMBERS_BIN, "--etcd", urls()[1], "--cluster", cluster_name(), "--watch"}, dir / "out", dir / "err"};
  const auto shows = [&](const std::string& text) {
    for (int i = 0; i < 3000; ++i) {  // 30 s
      if (child_process::slurp(dir / "out").find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  };
  EXPECT_TRUE(shows("joined early tcp://127.0.0.1:7001")) << child_process::slurp(dir / "err");
  {
    net::registry b{cfg()};
    b.join(member_named("late", 7002));
    EXPECT_TRUE(shows("joined late tcp://127.0.0.1:7002"));
  }  // b leaves
  EXPECT_TRUE(shows("left late tcp://127.0.0.1:7002"));
  p.kill(SIGTERM);  // and reaped
  EXPECT_EQ(p.wait(0ms), 0) << "ended by SIGTERM, it exits 0; " << child_process::slurp(dir / "err");
}

/// A cluster of its own: one of its etcd members is killed.
TEST(membership_etcd_failure, the_registry_goes_on_when_an_etcd_member_is_killed) {
  if (!etcd_support::cluster::installed()) GTEST_SKIP() << "etcd is not installed (Debian's etcd-server)";
  etcd_support::cluster etcd{etcd_dir("failure"), 3};
  // A longer lease than the other tests': a killed leader's election
  // (seconds on a loaded machine) must not be what this test measures.
  auto c = config_for(etcd.urls(), "failure");
  c.lease_ttl = 4s;
  net::registry a{c}, watcher{c};
  a.join(member_named("steady", 7001));
  events seen;
  auto sub = watcher.watch(seen.sink());
  ASSERT_TRUE(seen.wait_for(net::member_change::joined, "steady"));
  etcd.kill(0);  // the member every registry tries first; a quorum (2 of 3) remains

  net::registry b{c};
  b.join(member_named("newcomer", 7002));  // through the members that remain
  EXPECT_TRUE(seen.wait_for(net::member_change::joined, "newcomer"));
  std::this_thread::sleep_for(2 * c.lease_ttl);  // the keep-alives go on through the others
  EXPECT_TRUE(watcher.lookup("steady").has_value());
  EXPECT_EQ(seen.count(net::member_change::left, "steady"), 0u) << seen.describe();
  b.leave();
  EXPECT_TRUE(seen.wait_for(net::member_change::left, "newcomer"));
  EXPECT_EQ(watcher.members().size(), 1u);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::strcmp(argv[1], "--member-child") == 0) return member_child(argv[2], argv[3], argv[4]);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
