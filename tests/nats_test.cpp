// The NATS JetStream connectors (troupe::nats) against a real nats-server
// started by the tests on a free loopback port: the source reads a stream
// in order and goes on where the last run acknowledged; the sink publishes
// once; with checkpoints, a program killed with SIGKILL and run again, or a
// server killed and started again, leaves every input message once in the
// output stream (an oracle reads it back).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "connector_support.hpp"
#include "nats_server.hpp"
#include "troupe/nats.hpp"
#include "troupe/troupe.hpp"

namespace {

namespace st = troupe::stream;
namespace nats = troupe::nats;
using namespace nats_support;
using namespace connector_support;
using namespace std::chrono_literals;

class nats_connector : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!server::installed()) GTEST_SKIP() << "nats-server is not installed (scripts/setup installs it)";
    dir_ = fresh_dir("troupe_nats_", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    srv_ = std::make_unique<server>(dir_);
  }
  nats::connection_config at() const { return {.servers = srv_->url(), .give_up_after = 20s}; }
  /// The streams IN ("in", holding n numbered messages) and OUT ("out").
  std::unique_ptr<client> in_and_out(int n) {
    auto c = std::make_unique<client>(srv_->url());
    c->make_stream("IN", "in");
    c->make_stream("OUT", "out");
    c->publish("in", numbered("m", 0, n));
    return c;
  }
  /// nats_pipe reading IN into "out", with its checkpoints in dir_/ckpt.
  std::unique_ptr<process> pipe() const {
    return std::make_unique<process>(
        std::vector<std::string>{TROUPE_NATS_PIPE, srv_->url(), "IN", "pipe", "out", (dir_ / "ckpt").string(), "5"},
        dir_ / "pipe.out", dir_ / "pipe.err");
  }

  fs::path dir_;
  std::unique_ptr<server> srv_;
};

TEST_F(nats_connector, a_bounded_source_reads_the_stream_in_order_and_ends) {
  client c{srv_->url()};
  c.make_stream("IN", "in.>");
  c.publish("in.a", numbered("m", 0, 5000));
  troupe::actor_system sys{troupe::config{.workers = 2}};
  collected out;
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{
               nats::text_source({.connection = at(), .stream = "IN", .durable = "r", .batch = 100, .bounded = true}),
               out.sink()});
  ASSERT_TRUE(g.wait_for(30s));
  g.wait();
  EXPECT_EQ(out.items, numbered("m", 0, 5000));
}

TEST_F(nats_connector, a_fresh_run_goes_on_after_what_the_last_run_acknowledged) {
  client c{srv_->url()};
  c.make_stream("IN", "in");
  c.publish("in", numbered("m", 0, 300));
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto run = [&] {
    collected out;
    auto g = troupe::spawn_pattern(
        sys, troupe::pipeline{nats::text_source({.connection = at(), .stream = "IN", .durable = "r", .bounded = true}),
                              out.sink()});
    EXPECT_TRUE(g.wait_for(30s));
    g.wait();
    return out.items;
  };
  EXPECT_EQ(run(), numbered("m", 0, 300));
  c.publish("in", numbered("m", 300, 450));
  EXPECT_EQ(run(), numbered("m", 300, 450));
  EXPECT_EQ(run(), std::vector<std::string>{});
}

TEST_F(nats_connector, a_decoder_that_throws_fails_the_graph_naming_the_message) {
  client c{srv_->url()};
  c.make_stream("IN", "in");
  c.publish("in", {"1", "2", "x", "4"});
  troupe::actor_system sys{troupe::config{.workers = 1}};
  auto src = nats::source<int>({.connection = at(), .stream = "IN", .durable = "r", .bounded = true},
                               [](const nats::message& m) { return std::stoi(std::string{m.data}); });
  auto g = troupe::spawn_pattern(sys, troupe::pipeline{src, st::sink([](int) {})});
  const auto e = failure_of(g, 30s);
  EXPECT_NE(e.find("message 3 on 'in'"), std::string::npos) << e;
  EXPECT_NE(e.find("stoi"), std::string::npos) << e;
}

TEST_F(nats_connector, bad_settings_are_refused_naming_them) {
  const auto refused = [](auto make, const std::string& words) {
    try {
      make();
      ADD_FAILURE() << "accepted; expected: " << words;
    } catch (const nats::nats_error& e) {
      EXPECT_NE(std::string{e.what()}.find(words), std::string::npos) << e.what();
    }
  };
  refused([] { nats::text_source({.stream = "", .durable = "d"}); }, "no stream named");
  refused([] { nats::text_source({.stream = "S", .durable = "a.b"}); }, "durable name may not hold");
  refused([] { nats::text_source({.stream = "S", .durable = "d", .batch = 0}); }, "batch must be 1 to 1000000");
  refused([] { nats::text_sink({.subject = ""}); }, "no subject");
  refused([] { nats::text_sink({.subject = "a.*"}); }, "may not hold");
  // A stream that is not there, a subject no stream captures: at start.
  troupe::actor_system sys{troupe::config{.workers = 1}};
  client c{srv_->url()};
  c.make_stream("IN", "in");
  c.publish("in", {"a"});
  auto g1 = troupe::spawn_pattern(
      sys, troupe::pipeline{nats::text_source({.connection = at(), .stream = "NOPE", .durable = "r", .bounded = true}),
                            st::sink([](const std::string&) {})});
  const auto e1 = failure_of(g1, 30s);
  EXPECT_NE(e1.find("nats source 'NOPE/r'"), std::string::npos) << e1;
  EXPECT_NE(e1.find("stream not found"), std::string::npos) << e1;
  auto g2 = troupe::spawn_pattern(
      sys, troupe::pipeline{nats::text_source({.connection = at(), .stream = "IN", .durable = "r", .bounded = true}),
                            nats::text_sink({.connection = at(), .subject = "nowhere"})});
  const auto e2 = failure_of(g2, 30s);
  EXPECT_NE(e2.find("no JetStream stream captures subject 'nowhere'"), std::string::npos) << e2;
  // A farm of sources: one replica per consumer.
  auto g3 = troupe::spawn_pattern(
      sys, troupe::pipeline{troupe::farm{nats::text_source({.connection = at(), .stream = "IN", .durable = "r"}), 2},
                            st::sink([](const std::string&) {})});
  const auto e3 = failure_of(g3, 30s);
  EXPECT_NE(e3.find("runs as 1 replica, not 2"), std::string::npos) << e3;
}

TEST_F(nats_connector, a_quiet_stream_is_no_failure) {
  client c{srv_->url()};
  c.make_stream("IN", "in");
  troupe::actor_system sys{troupe::config{.workers = 1}};
  auto conn = at();
  conn.give_up_after = 500ms;
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{nats::text_source({.connection = conn, .stream = "IN", .durable = "r", .poll = 50ms}),
                            st::sink([](const std::string&) {})});
  EXPECT_FALSE(g.wait_for(2s)) << failure_of(g, 30s);  // many polls, each answered "nothing now"
  g.cancel();
  g.wait_for(30s);
}

TEST_F(nats_connector, a_consumer_deleted_under_the_source_fails_the_graph_with_the_server_s_answer) {
  client c{srv_->url()};
  c.make_stream("IN", "in");
  c.publish("in", numbered("m", 0, 10));
  troupe::actor_system sys{troupe::config{.workers = 1}};
  std::atomic<int> seen{0};
  auto conn = at();
  conn.give_up_after = 2s;
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{nats::text_source({.connection = conn, .stream = "IN", .durable = "r"}),
                            st::sink([&](const std::string&) { ++seen; })});
  for (int i = 0; i < 1000 && seen < 10; ++i) std::this_thread::sleep_for(10ms);
  ASSERT_EQ(seen.load(), 10);
  c.delete_consumer("IN", "r");
  const auto e = failure_of(g, 30s);
  EXPECT_NE(e.find("nats source 'IN/r': asking for messages: the server said"), std::string::npos) << e;
}

TEST_F(nats_connector, the_sink_publishes_every_element_once_in_either_mode_without_checkpoints) {
  client c{srv_->url()};
  c.make_stream("IN", "in");
  c.make_stream("OUT", "out.>");
  c.publish("in", numbered("m", 0, 2000));
  troupe::actor_system sys{troupe::config{.workers = 2}};
  for (auto [mode, durable] :
       {std::pair{nats::delivery::exactly_once, "once"}, std::pair{nats::delivery::at_least_once, "least"}}) {
    auto g = troupe::spawn_pattern(
        sys, troupe::pipeline{
                 nats::text_source({.connection = at(), .stream = "IN", .durable = durable, .bounded = true}),
                 nats::text_sink({.connection = at(), .subject = std::string{"out."} + durable, .mode = mode})});
    ASSERT_TRUE(g.wait_for(30s));
    g.wait();
  }
  const auto all = c.read_all("OUT");
  ASSERT_EQ(all.size(), 4000u);
  std::vector<std::string> first(all.begin(), all.begin() + 2000), second(all.begin() + 2000, all.end());
  EXPECT_EQ(first, numbered("m", 0, 2000));
  EXPECT_EQ(second, numbered("m", 0, 2000));
}

/// The output stream holds each input message, tagged, exactly once.
void expect_each_once(client& c, int n) {
  const auto all = c.read_all("OUT");
  std::map<std::string, int> seen;
  for (const auto& s : all) ++seen[s];
  int missing = 0, twice = 0;
  for (int i = 0; i < n; ++i) {
    const auto it = seen.find("m" + std::to_string(i) + ":done");
    if (it == seen.end()) ++missing;
    else if (it->second > 1) ++twice;
  }
  EXPECT_EQ(missing, 0) << "input messages missing from the output";
  EXPECT_EQ(twice, 0) << "input messages more than once in the output";
  EXPECT_EQ(all.size(), static_cast<std::size_t>(n));
}

/// Runs IN -> a farm tagging each message -> "out" with checkpoints,
/// stopped like a crash (cancel: no on_stop, no commit) 4 times and run
/// again to its end, in one process (so that it runs under every
/// sanitizer; the kill -9 test below does it across processes). Returns how
/// many runs were stopped.
int crash_and_finish(const nats::connection_config& at, const std::string& ckpt, nats::delivery mode) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto graph = [&] {
    return troupe::pipeline{
        nats::text_source({.connection = at, .stream = "IN", .durable = "r", .batch = 50, .bounded = true}),
        troupe::farm{st::map([](std::string s) {
                       std::this_thread::sleep_for(100us);
                       return s + ":done";
                     }),
                     2},
        nats::text_sink({.connection = at, .subject = "out", .mode = mode})};
  };
  const st::options with{.checkpoint = {.dir = ckpt, .interval = 10ms}};
  int crashes = 0;
  for (int crash = 0; crash < 4; ++crash) {
    auto g = troupe::spawn_pattern(sys, graph(), with);
    std::this_thread::sleep_for(std::chrono::milliseconds{30 + 25 * crash});
    if (g.done()) break;
    g.cancel();
    g.wait_for(30s);
    ++crashes;
  }
  auto g = troupe::spawn_pattern(sys, graph(), with);
  EXPECT_TRUE(g.wait_for(60s));
  g.wait();
  return crashes;
}

TEST_F(nats_connector, a_graph_stopped_like_a_crash_and_run_again_publishes_each_message_once) {
  constexpr int n = 4000;
  auto c = in_and_out(n);
  EXPECT_GE(crash_and_finish(at(), (dir_ / "ckpt").string(), nats::delivery::exactly_once), 2)
      << "the runs ended before their crash: the test checks too little";
  expect_each_once(*c, n);
}

TEST_F(nats_connector, at_least_once_a_graph_stopped_like_a_crash_and_run_again_loses_nothing) {
  constexpr int n = 4000;
  auto c = in_and_out(n);
  EXPECT_GE(crash_and_finish(at(), (dir_ / "ckpt").string(), nats::delivery::at_least_once), 2)
      << "the runs ended before their crash: the test checks too little";
  std::set<std::string> seen;
  for (const auto& s : c->read_all("OUT")) seen.insert(s);
  int missing = 0;
  for (int i = 0; i < n; ++i) missing += seen.count("m" + std::to_string(i) + ":done") == 0 ? 1 : 0;
  EXPECT_EQ(missing, 0) << "input messages missing from the output";
}

TEST_F(nats_connector, a_program_killed_and_run_again_publishes_each_message_once) {
  constexpr int n = 20000;
  auto c = in_and_out(n);
  // Killed at a random moment, 6 times.
  const auto [code, kills] = child_process::kill_and_rerun([&] { return pipe(); }, 6, 50ms, 400ms, 60s, 20261128);
  ASSERT_EQ(code, 0) << slurp(dir_ / "pipe.err");
  EXPECT_GE(kills, 3) << "most runs ended before their kill: the test checks too little";
  expect_each_once(*c, n);
}

TEST_F(nats_connector, a_server_killed_and_started_again_mid_run_loses_and_repeats_nothing) {
  constexpr int n = 20000;
  auto c = in_and_out(n);
  auto p = pipe();
  for (int i = 0; i < 2; ++i) {
    std::this_thread::sleep_for(300ms);
    srv_->kill();
    std::this_thread::sleep_for(500ms);
    srv_->start();
  }
  ASSERT_EQ(p->wait(90s), 0) << slurp(dir_ / "pipe.err");
  expect_each_once(*c, n);  // c has reconnected meanwhile
}

/// Runs an application binary to its end (bounded); its exit code.
int run_app(const std::vector<std::string>& args, const fs::path& dir) {
  process p{args, dir / "app.out", dir / "app.err"};
  return p.wait(120s);
}

TEST_F(nats_connector, troupe_wc_reads_a_stream_and_publishes_what_its_sink_writes) {
  auto lines = lines_of(TROUPE_APPS_DATA "/book.dat");
  lines.resize(3000);
  client c{srv_->url()};
  c.make_stream("IN", "in");
  c.make_stream("OUT", "out");
  c.publish("in", lines);
  {
    std::ofstream f{dir_ / "in.txt"};
    for (const auto& l : lines) f << l << '\n';
  }
  // The same run from the file, one replica per operator: the same order.
  ASSERT_EQ(run_app({TROUPE_WC_BIN, "--input", (dir_ / "in.txt").string(), "--passes", "1", "--parallelism", "1,1,1,1",
                     "--output", (dir_ / "expected.txt").string()},
                    dir_),
            0)
      << slurp(dir_ / "app.err");
  auto expected = lines_of(dir_ / "expected.txt");
  expected.erase(std::find(expected.begin(), expected.end(), "# final counts"), expected.end());
  ASSERT_EQ(run_app({TROUPE_WC_BIN, "--input", srv_->url() + "/IN", "--passes", "1", "--parallelism", "1,1,1,1",
                     "--output", srv_->url() + "/out"},
                    dir_),
            0)
      << slurp(dir_ / "app.err");
  EXPECT_EQ(c.read_all("OUT"), expected);
  // Malformed flags name themselves.
  EXPECT_EQ(run_app({TROUPE_WC_BIN, "--input", "nats://127.0.0.1:1", "--passes", "1"}, dir_), 2);
  EXPECT_NE(slurp(dir_ / "app.err").find("--input 'nats://127.0.0.1:1': expected nats://HOST:PORT/NAME"),
            std::string::npos)
      << slurp(dir_ / "app.err");
}

TEST_F(nats_connector, troupe_fd_from_a_stream_to_a_stream_killed_and_run_again_publishes_the_file_run_s_lines_once) {
  // Input: fd's own generated transactions, one message each.
  ASSERT_EQ(run_app({TROUPE_FD_BIN, "--generate", (dir_ / "in.txt").string(), "--lines", "100000"}, dir_), 0);
  client c{srv_->url()};
  c.make_stream("IN", "in");
  c.make_stream("OUT", "out");
  c.publish("in", lines_of(dir_ / "in.txt"));
  ASSERT_EQ(run_app({TROUPE_FD_BIN, "--input", (dir_ / "in.txt").string(), "--passes", "1", "--parallelism", "1,2,1",
                     "--output", (dir_ / "expected.txt").string()},
                    dir_),
            0)
      << slurp(dir_ / "app.err");
  auto expected = lines_of(dir_ / "expected.txt");
  ASSERT_FALSE(expected.empty());
  const std::vector<std::string> args{TROUPE_FD_BIN,
                                      "--input",
                                      srv_->url() + "/IN",
                                      "--passes",
                                      "1",
                                      "--parallelism",
                                      "1,2,1",
                                      "--output",
                                      srv_->url() + "/out",
                                      "--checkpoint-dir",
                                      (dir_ / "ckpt").string(),
                                      "--checkpoint-interval",
                                      "20"};
  const auto [code, kills] = child_process::kill_and_rerun(
      [&] { return std::make_unique<process>(args, dir_ / "app.out", dir_ / "app.err"); }, 5, 40ms, 250ms, 120s, 1128);
  ASSERT_EQ(code, 0) << slurp(dir_ / "app.err");
  EXPECT_GE(kills, 2) << "most runs ended before their kill: the test checks too little";
  auto got = c.read_all("OUT");
  std::sort(got.begin(), got.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(got.size(), expected.size());
  EXPECT_TRUE(got == expected) << "the output stream differs from the file run's output";
}

}  // namespace
