// The applications' kafka:// flags (apps/common/connectors.hpp), the apps
// run as programs against librdkafka's mock cluster, started inside this
// test process on loopback ports: troupe-wc reads a topic to its end (its
// partitions spread over two source replicas) and produces the lines its
// file run writes; troupe-fd from topic to topic with checkpoints, killed
// with SIGKILL and run again, loses no line of its file run (the mock keeps
// no transactional offsets, so a restart produces some lines again: at
// least once here, exactly once against a real broker); a malformed URL is
// a usage error naming the flag.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "child_process.hpp"
#include "connector_support.hpp"
#include "kafka_mock.hpp"

namespace {

namespace fs = std::filesystem;
using child_process::process;
using child_process::slurp;
using namespace std::chrono_literals;
using connector_support::lines_of;

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

/// Runs an application binary to its end (bounded), its output in
/// dir/app.out and dir/app.err (afresh); its exit code.
int run_app(const std::vector<std::string>& args, const fs::path& dir) {
  fs::remove(dir / "app.out");
  fs::remove(dir / "app.err");
  process p{args, dir / "app.out", dir / "app.err"};
  return p.wait(120s);
}

/// Produces fd's transactions to `topic`, each to the partition of its
/// customer (the line's first 3 characters), so that a customer's
/// transactions stay in the file's order however the partitions
/// interleave. Waits until all are stored.
void produce_by_customer(const std::string& brokers, const std::string& topic, const std::vector<std::string>& lines,
                         int partitions) {
  rd_kafka_t* rk = kafka_mock::handle(RD_KAFKA_PRODUCER, {{"bootstrap.servers", brokers}, {"linger.ms", "5"}});
  for (const auto& l : lines) {
    const auto p =
        static_cast<std::int32_t>(std::hash<std::string>{}(l.substr(0, 3)) % static_cast<std::size_t>(partitions));
    for (;;) {
      const rd_kafka_resp_err_t e = rd_kafka_producev(
          rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(p), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_VALUE(const_cast<char*>(l.data()), l.size()), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) kafka_mock::fail(std::string{"produce: "} + rd_kafka_err2str(e));
      rd_kafka_poll(rk, 10);
    }
  }
  const rd_kafka_resp_err_t e = rd_kafka_flush(rk, 60000);
  rd_kafka_destroy(rk);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) kafka_mock::fail(std::string{"flush: "} + rd_kafka_err2str(e));
}

/// The low watermark of each partition of `topic`: above 0 where the mock
/// cluster has dropped a partition's oldest records (it keeps about 5 MB or
/// 100,000 batches a partition).
std::vector<std::int64_t> low_watermarks(const std::string& brokers, const std::string& topic, int partitions) {
  rd_kafka_t* rk = kafka_mock::handle(RD_KAFKA_CONSUMER, {{"bootstrap.servers", brokers}, {"group.id", "watermarks"}});
  std::vector<std::int64_t> out;
  for (int p = 0; p < partitions; ++p) {
    std::int64_t lo = 0, hi = 0;
    const rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, topic.c_str(), p, &lo, &hi, 10000);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_destroy(rk);
      kafka_mock::fail("watermarks of " + topic + ": " + rd_kafka_err2str(e));
    }
    out.push_back(lo);
  }
  rd_kafka_destroy(rk);
  return out;
}

class kafka_apps : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = connector_support::fresh_dir("troupe_kafka_apps_",
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  /// The flag value naming `path` (TOPIC or TOPIC/GROUP) on the mock cluster.
  std::string url(const std::string& path) const { return "kafka://" + mock_.brokers() + "/" + path; }

  kafka_mock::cluster mock_{3};
  fs::path dir_;
};

TEST_F(kafka_apps, troupe_wc_reads_a_topic_to_its_end_and_produces_what_its_file_run_writes) {
  const auto lines = lines_of(TROUPE_APPS_DATA "/book.dat");
  ASSERT_FALSE(lines.empty());
  mock_.make_topic("in", 3);
  mock_.make_topic("out", 2);
  mock_.make_topic("again", 1);
  kafka_mock::produce(mock_.brokers(), "in", lines, 3);
  {
    std::ofstream f{dir_ / "in.txt"};
    for (const auto& l : lines) f << l << '\n';
  }
  ASSERT_EQ(run_app({TROUPE_WC_BIN, "--input", (dir_ / "in.txt").string(), "--passes", "1", "--parallelism", "1,1,1,1",
                     "--output", (dir_ / "expected.txt").string()},
                    dir_),
            0)
      << slurp(dir_ / "app.err");
  auto expected = lines_of(dir_ / "expected.txt");
  expected.erase(std::find(expected.begin(), expected.end(), "# final counts"), expected.end());
  ASSERT_FALSE(expected.empty());
  // The partitions read in any order: each word's counts 1, 2, ... all the
  // same, so the sorted lines are the file run's.
  const std::vector<std::string> args{TROUPE_WC_BIN, "--input",  url("in"),       "--passes", "1",
                                      "--output",    url("out"), "--parallelism", "2,1,1,1"};
  ASSERT_EQ(run_app(args, dir_), 0) << slurp(dir_ / "app.err");
  EXPECT_NE(slurp(dir_ / "app.out").find("source " + std::to_string(lines.size()) + " tuples"), std::string::npos)
      << slurp(dir_ / "app.out");
  EXPECT_EQ(sorted(kafka_mock::read_all(mock_.brokers(), "out")), sorted(expected));
  // Run again: the group (troupe-wc) has committed the offsets, so nothing
  // is left to read; another group reads the topic afresh.
  ASSERT_EQ(run_app(args, dir_), 0) << slurp(dir_ / "app.err");
  EXPECT_NE(slurp(dir_ / "app.out").find("source 0 tuples"), std::string::npos) << slurp(dir_ / "app.out");
  EXPECT_EQ(kafka_mock::read_all(mock_.brokers(), "out").size(), expected.size());
  ASSERT_EQ(run_app({TROUPE_WC_BIN, "--input", url("in/another"), "--passes", "1", "--output", url("again")}, dir_), 0)
      << slurp(dir_ / "app.err");
  EXPECT_EQ(sorted(kafka_mock::read_all(mock_.brokers(), "again")), sorted(expected));
}

TEST_F(kafka_apps, troupe_fd_from_a_topic_to_a_topic_killed_and_run_again_loses_no_line_of_the_file_run) {
  // Input: fd's own generated transactions, one record each, a customer's
  // all in one partition (fd's output depends on each customer's order),
  // read by two source replicas. (The mock keeps about 100,000 records a
  // partition: the topics have enough partitions to stay below that.)
  ASSERT_EQ(run_app({TROUPE_FD_BIN, "--generate", (dir_ / "in.txt").string(), "--lines", "600000"}, dir_), 0);
  mock_.make_topic("in", 8);
  mock_.make_topic("out", 4);
  produce_by_customer(mock_.brokers(), "in", lines_of(dir_ / "in.txt"), 8);
  ASSERT_EQ(run_app({TROUPE_FD_BIN, "--input", (dir_ / "in.txt").string(), "--passes", "1", "--parallelism", "1,2,1",
                     "--output", (dir_ / "expected.txt").string()},
                    dir_),
            0)
      << slurp(dir_ / "app.err");
  const auto expected = lines_of(dir_ / "expected.txt");
  ASSERT_FALSE(expected.empty());
  const std::vector<std::string> args{TROUPE_FD_BIN,
                                      "--input",
                                      url("in"),
                                      "--passes",
                                      "1",
                                      "--parallelism",
                                      "2,2,1",
                                      "--output",
                                      url("out"),
                                      "--checkpoint-dir",
                                      (dir_ / "ckpt").string(),
                                      "--checkpoint-interval",
                                      "20"};
  // Killed at a random moment, 6 times.
  const auto [code, kills] = child_process::kill_and_rerun(
      [&] { return std::make_unique<process>(args, dir_ / "app.out", dir_ / "app.err"); }, 6, 20ms, 200ms, 120s, 1128);
  ASSERT_EQ(code, 0) << slurp(dir_ / "app.err");
  EXPECT_GE(kills, 2) << "most runs ended before their kill: the test checks too little";
  EXPECT_NE(slurp(dir_ / "app.err").find("resumed from checkpoint"), std::string::npos)
      << "no run resumed from a checkpoint: the test checks too little\n"
      << slurp(dir_ / "app.err");
  ASSERT_EQ(low_watermarks(mock_.brokers(), "out", 4), std::vector<std::int64_t>(4, 0))
      << "the mock cluster dropped output records: the test cannot tell what the app wrote";
  const auto got = kafka_mock::read_all(mock_.brokers(), "out");
  std::map<std::string, long> want, have;
  for (const auto& l : expected) ++want[l];
  for (const auto& l : got) ++have[l];
  long missing = 0, foreign = 0;
  for (const auto& [l, n] : want) {
    const auto it = have.find(l);
    missing += std::max(0L, n - (it == have.end() ? 0 : it->second));
  }
  for (const auto& [l, n] : have) foreign += want.count(l) == 0 ? n : 0;
  if (missing != 0 || foreign != 0) {  // kept for a look: the topic's lines beside the file run's
    std::ofstream f{dir_ / "got.txt"};
    for (const auto& l : got) f << l << '\n';
  }
  EXPECT_EQ(missing, 0) << "lines of the file run missing from the output topic (" << (dir_ / "got.txt").string()
                        << " holds the topic's lines, expected.txt the file run's)\n"
                        << slurp(dir_ / "app.err");
  EXPECT_EQ(foreign, 0) << "lines in the output topic that the file run does not write";
  // The mock cluster keeps no transactional offsets (the sink's marker) and
  // hides no aborted transaction, so what a killed run had produced, and
  // what a restored sink produces again, shows up twice: counted, not
  // checked (a real broker's read_committed consumer sees each line once).
  const long duplicates = static_cast<long>(got.size()) - static_cast<long>(expected.size()) + missing - foreign;
  std::cout << "troupe-fd over Kafka: " << expected.size() << " lines, " << kills << " kills, " << duplicates
            << " duplicates (the mock cluster keeps no transactional offsets)\n";
  RecordProperty("kills", kills);
  RecordProperty("duplicates", static_cast<int>(duplicates));
}

TEST(kafka_apps_flags, a_malformed_kafka_url_is_refused_naming_the_flag) {
  const auto dir = connector_support::fresh_dir("troupe_kafka_apps_", "flags");
  const auto refused = [&](const std::vector<std::string>& args, const std::string& words) {
    EXPECT_EQ(run_app(args, dir), 2) << slurp(dir / "app.err");
    EXPECT_NE(slurp(dir / "app.err").find(words), std::string::npos) << slurp(dir / "app.err");
  };
  refused({TROUPE_WC_BIN, "--input", "kafka://127.0.0.1:9092", "--passes", "1"},
          "--input 'kafka://127.0.0.1:9092': expected kafka://BROKER[,BROKER...]/TOPIC[/GROUP] (no topic after the "
          "brokers)");
  refused({TROUPE_FD_BIN, "--input", "kafka://127.0.0.1:port/in", "--passes", "1"},
          "--input 'kafka://127.0.0.1:port/in': expected kafka://BROKER[,BROKER...]/TOPIC[/GROUP]");
  refused({TROUPE_WC_BIN, "--input", "kafka://a:1,,b:2/in/g/x", "--passes", "1"},
          "--input 'kafka://a:1,,b:2/in/g/x': expected");
  refused({TROUPE_FD_BIN, "--output", "kafka://127.0.0.1:9092/out/group", "--passes", "1"},
          "--output 'kafka://127.0.0.1:9092/out/group': expected kafka://BROKER[,BROKER...]/TOPIC");
  refused({TROUPE_WC_BIN, "--output=kafka://127.0.0.1:9092/no topic", "--passes", "1"},
          "--output 'kafka://127.0.0.1:9092/no topic': expected kafka://BROKER[,BROKER...]/TOPIC");
}

}  // namespace
