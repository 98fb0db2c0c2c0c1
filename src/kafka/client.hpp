// client.hpp (src): the librdkafka side shared by the Kafka connectors: a
// configuration from the connector's settings and the user's properties,
// and errors in words.
#pragma once

#include <librdkafka/rdkafka.h>

#include <string>

#include "troupe/kafka/client.hpp"

namespace troupe::kafka::detail {

/// A librdkafka configuration: bootstrap.servers from `client`, then `own`
/// (the connector's), then the user's properties. Throws kafka_error naming
/// `who` and the property librdkafka refused.
rd_kafka_conf_t* make_conf(const std::string& who, const client_config& client, const property_list& own);

/// A producer or consumer handle; takes `conf` (also when it throws).
rd_kafka_t* make_handle(const std::string& who, rd_kafka_type_t type, rd_kafka_conf_t* conf);

/// "<what>: <librdkafka's text for err>".
std::string describe(const std::string& what, rd_kafka_resp_err_t err);
/// Throws kafka_error(describe(...)) unless err is NO_ERROR.
void check(const std::string& what, rd_kafka_resp_err_t err);
/// Throws kafka_error naming `what` and the error, which it destroys; nothing for nullptr.
void check(const std::string& what, rd_kafka_error_t* err);

/// Milliseconds for librdkafka's timeouts, at least 1.
int timeout_ms(const client_config& client) noexcept;

}  // namespace troupe::kafka::detail
