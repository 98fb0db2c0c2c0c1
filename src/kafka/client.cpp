// client.cpp: configuration and errors shared by the Kafka connectors.
#include "client.hpp"

#include <algorithm>
#include <limits>

namespace troupe::kafka::detail {

rd_kafka_conf_t* make_conf(const std::string& who, const client_config& client, const property_list& own) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  const auto set = [&](const std::string& name, const std::string& value, const char* whose) {
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw kafka_error{who + ": " + whose + " property " + name + "=" + value + ": " + err};
    }
  };
  set("bootstrap.servers", client.brokers, "the");
  for (const auto& [name, value] : own) set(name, value, "the");
  for (const auto& [name, value] : client.properties) set(name, value, "the user's");
  return conf;
}

rd_kafka_t* make_handle(const std::string& who, rd_kafka_type_t type, rd_kafka_conf_t* conf) {
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);  // takes conf when it succeeds
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    throw kafka_error{who + ": making the " + (type == RD_KAFKA_PRODUCER ? "producer" : "consumer") + ": " + err};
  }
  return rk;
}

std::string describe(const std::string& what, rd_kafka_resp_err_t err) {
  return what + ": " + rd_kafka_err2str(err) + " (" + rd_kafka_err2name(err) + ")";
}

void check(const std::string& what, rd_kafka_resp_err_t err) {
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) throw kafka_error{describe(what, err)};
}

void check(const std::string& what, rd_kafka_error_t* err) {
  if (err == nullptr) return;
  std::string text = what + ": " + rd_kafka_error_string(err) + " (" + rd_kafka_error_name(err) + ")";
  rd_kafka_error_destroy(err);
  throw kafka_error{text};
}

int timeout_ms(const client_config& client) noexcept {
  return static_cast<int>(std::clamp<long long>(client.timeout.count(), 1, std::numeric_limits<int>::max()));
}

}  // namespace troupe::kafka::detail
