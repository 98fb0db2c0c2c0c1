// client.hpp: what the Kafka connectors share (the optional troupe::kafka
// module, over Debian's librdkafka): the brokers and librdkafka's own
// properties, how a record looks to a decoder or an encoder, and the
// module's error.
//   troupe::kafka::client_config at{.brokers = "10.0.0.5:9092",
//                                   .properties = {{"security.protocol", "SASL_SSL"},
//                                                  {"sasl.mechanism", "SCRAM-SHA-512"}}};
// The connectors themselves: source.hpp (offsets kept in checkpoints,
// partitions spread over its replicas or taken from a consumer group) and
// sink.hpp (an idempotent producer; transactions committed with
// checkpoints). See docs/connectors.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "troupe/util/exception.hpp"

namespace troupe::kafka {

/// A librdkafka call failed, a broker refused, a property is unknown or a
/// record could not be decoded: the message names the connector, the call
/// and librdkafka's words (also a troupe::exception with errc::runtime_error).
class kafka_error : public std::runtime_error, public troupe::exception {
 public:
  explicit kafka_error(const std::string& what) : std::runtime_error{what}, troupe::exception{errc::runtime_error} {}
};

/// librdkafka configuration properties, passed through as they are
/// (security.protocol, sasl.*, ssl.*, fetch.max.bytes, linger.ms, ...):
/// https://github.com/confluentinc/librdkafka/blob/master/CONFIGURATION.md
using property_list = std::vector<std::pair<std::string, std::string>>;

/// How to reach the cluster.
struct client_config {
  std::string brokers = "127.0.0.1:9092";  ///< bootstrap.servers: host:port, comma-separated
  property_list properties{};              ///< set after the connector's own (they win)
  /// Each call to the brokers that the connector waits for (metadata,
  /// offsets, transactions).
  std::chrono::milliseconds timeout{10000};
};

/// A record of a topic, as a source's decoder sees it (valid during the call
/// only).
struct message {
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp_ms = -1;  ///< the record's timestamp (ms since the epoch; -1: none; timed_source only)
  std::string_view key;
  std::string_view value;
};

/// A record a sink's encoder fills: the value, an optional key (records with
/// a key go to the partition of its hash) and an optional partition.
struct record {
  std::string key;
  std::string value;
  std::int32_t partition = -1;  ///< -1: by the key's hash, or the producer's partitioner
};

}  // namespace troupe::kafka
