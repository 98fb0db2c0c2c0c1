// kafka_mock.hpp: librdkafka's mock cluster started inside the calling
// process (brokers on loopback ports that other processes reach too), and
// a small librdkafka client to produce test records and read a topic back.
// For the Kafka connector tests and benchmarks (no GoogleTest here).
#pragma once

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kafka_mock {

[[noreturn]] inline void fail(const std::string& what) { throw std::runtime_error{"kafka_mock: " + what}; }

inline rd_kafka_t* handle(rd_kafka_type_t type, const std::vector<std::pair<std::string, std::string>>& props) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  for (const auto& [k, v] : props)
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) fail(k + ": " + err);
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
  if (rk == nullptr) fail(std::string{"rd_kafka_new: "} + err);
  return rk;
}

/// A mock cluster of `brokers` brokers, gone with the object.
class cluster {
 public:
  explicit cluster(int brokers = 3) {
    rk_ = handle(RD_KAFKA_PRODUCER, {{"log_level", "0"}});
    mc_ = rd_kafka_mock_cluster_new(rk_, brokers);
    if (mc_ == nullptr) fail("cannot start a mock cluster");
    bootstraps_ = rd_kafka_mock_cluster_bootstraps(mc_);
  }
  ~cluster() {
    rd_kafka_mock_cluster_destroy(mc_);
    rd_kafka_destroy(rk_);
  }
  cluster(const cluster&) = delete;
  cluster& operator=(const cluster&) = delete;

  const std::string& brokers() const noexcept { return bootstraps_; }
  rd_kafka_mock_cluster_t* mock() const noexcept { return mc_; }
  void make_topic(const std::string& topic, int partitions) {
    if (rd_kafka_mock_topic_create(mc_, topic.c_str(), partitions, 1) != RD_KAFKA_RESP_ERR_NO_ERROR)
      fail("cannot make topic " + topic);
  }
  /// Requests about `topic` are answered with `err` (an unknown topic, say).
  void topic_error(const std::string& topic, rd_kafka_resp_err_t err) {
    rd_kafka_mock_topic_set_error(mc_, topic.c_str(), err);
  }
  void broker_down(int id) { (void)rd_kafka_mock_broker_set_down(mc_, id); }
  void broker_up(int id) { (void)rd_kafka_mock_broker_set_up(mc_, id); }

 private:
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_mock_cluster_t* mc_ = nullptr;
  std::string bootstraps_;
};

/// Produces `values` to `topic`: round robin over `partitions` partitions
/// (-1: the partitioner decides), with timestamps `ts0 + i` when ts0 >= 0.
/// Waits until all are stored.
inline void produce(const std::string& brokers, const std::string& topic, const std::vector<std::string>& values,
                    int partitions = -1, std::int64_t ts0 = -1) {
  rd_kafka_t* rk = handle(RD_KAFKA_PRODUCER, {{"bootstrap.servers", brokers}, {"linger.ms", "5"}});
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::int32_t p = partitions > 0 ? static_cast<std::int32_t>(i % static_cast<std::size_t>(partitions)) : -1;
    for (;;) {
      const rd_kafka_resp_err_t e = rd_kafka_producev(
          rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(p), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_VALUE(const_cast<char*>(values[i].data()), values[i].size()),
          RD_KAFKA_V_TIMESTAMP(ts0 >= 0 ? ts0 + static_cast<std::int64_t>(i) : 0), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) fail(std::string{"produce: "} + rd_kafka_err2str(e));
      rd_kafka_poll(rk, 10);
    }
  }
  const rd_kafka_resp_err_t e = rd_kafka_flush(rk, 60000);
  rd_kafka_destroy(rk);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) fail(std::string{"flush: "} + rd_kafka_err2str(e));
}

/// Every record's value in `topic` now (each partition from its start to
/// its end), partition after partition; `committed`: only what committed
/// transactions hold (isolation.level read_committed).
inline std::vector<std::string> read_all(const std::string& brokers, const std::string& topic, bool committed = false) {
  rd_kafka_t* rk = handle(RD_KAFKA_CONSUMER, {{"bootstrap.servers", brokers},
                                              {"isolation.level", committed ? "read_committed" : "read_uncommitted"},
                                              {"group.id", "kafka_mock-read_all"},  // assigned: never joins it
                                              {"enable.partition.eof", "false"}});
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR) fail("metadata of " + topic);
  rd_kafka_topic_destroy(rkt);
  const int n = md->topics[0].partition_cnt;
  rd_kafka_metadata_destroy(md);
  std::vector<std::string> out;
  for (int p = 0; p < n; ++p) {
    std::int64_t lo = 0, hi = 0;
    if (rd_kafka_query_watermark_offsets(rk, topic.c_str(), p, &lo, &hi, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
      fail("watermarks of " + topic);
    if (hi <= lo) continue;
    rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic.c_str(), p)->offset = lo;
    rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    std::int64_t next = lo;
    for (int idle = 0; next < hi && idle < 200;) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 50);
      if (m == nullptr) {
        ++idle;
        continue;
      }
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->partition == p) {
        out.emplace_back(static_cast<const char*>(m->payload), m->len);
        next = m->offset + 1;
        idle = 0;
      } else if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        const std::string why = rd_kafka_message_errstr(m);
        rd_kafka_message_destroy(m);
        fail("reading " + topic + ": " + why);
      }
      rd_kafka_message_destroy(m);
    }
    if (next < hi) fail("reading " + topic + " partition " + std::to_string(p) + " stopped short");
    rd_kafka_assign(rk, nullptr);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return out;
}

}  // namespace kafka_mock
