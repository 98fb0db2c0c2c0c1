#include "connectors.hpp"

#include <chrono>
#include <cstddef>

#include "app.hpp"

namespace troupe_apps {

bool is_nats(const std::string& value) noexcept { return value.rfind("nats://", 0) == 0; }
bool is_kafka(const std::string& value) noexcept { return value.rfind("kafka://", 0) == 0; }

std::string output_file_path(const cli& c) {
  if (!c.checkpoint_dir.empty() || is_log(c.output)) return {};
  return c.output;
}

usage_error missing_module(const char* flag, const std::string& value) {
  return usage_error(std::string{"--"} + flag + " " + value + ": this build has no " +
                     (is_nats(value) ? "troupe::nats (libnats-dev)" : "troupe::kafka (librdkafka-dev)"));
}

nats_url parse_nats_url(const std::string& value, const char* flag, bool second_allowed) {
  const auto bad = [&](const std::string& why) {
    return usage_error(std::string{"--"} + flag + " '" + value + "': " + why);
  };
  if (!is_nats(value)) throw bad("not a nats:// URL");
  const auto rest = value.substr(7);
  const auto slash = rest.find('/');
  if (slash == std::string::npos || slash == 0) throw bad("expected nats://HOST:PORT/NAME");
  nats_url u;
  u.server = "nats://" + rest.substr(0, slash);
  const auto path = rest.substr(slash + 1);
  const auto next = path.find('/');
  u.first = path.substr(0, next);
  if (next != std::string::npos) u.second = path.substr(next + 1);
  if (u.first.empty()) throw bad("no name after the server");
  if (next != std::string::npos && (!second_allowed || u.second.empty() || u.second.find('/') != std::string::npos))
    throw bad(second_allowed ? "expected nats://HOST:PORT/STREAM or nats://HOST:PORT/STREAM/DURABLE"
                             : "expected nats://HOST:PORT/SUBJECT");
  return u;
}

namespace {

/// Whether `port` is a whole number from 1 to 65535.
bool valid_port(std::string_view port) {
  if (port.empty() || port.size() > 5) return false;
  unsigned n = 0;
  for (const char ch : port) {
    if (ch < '0' || ch > '9') return false;
    n = n * 10 + static_cast<unsigned>(ch - '0');
  }
  return n >= 1 && n <= 65535;
}

/// Why `broker` (HOST[:PORT], an IPv6 host in brackets) is not one, "" if it is.
std::string broker_problem(std::string_view broker) {
  if (broker.empty()) return "an empty broker in the list";
  if (broker.find_first_of(" \t@?#") != std::string_view::npos)
    return "broker '" + std::string{broker} + "' is not HOST[:PORT]";
  std::string_view host = broker;
  if (broker.front() == '[') {
    const auto close = broker.find(']');
    if (close == std::string_view::npos || close == 1) return "broker '" + std::string{broker} + "' is not HOST[:PORT]";
    host = broker.substr(0, close + 1);
    const auto after = broker.substr(close + 1);
    if (!after.empty() && (after.front() != ':' || !valid_port(after.substr(1))))
      return "broker '" + std::string{broker} + "': expected a port from 1 to 65535 after the host";
    return {};
  }
  const auto colon = broker.rfind(':');
  if (colon != std::string_view::npos) {
    host = broker.substr(0, colon);
    if (!valid_port(broker.substr(colon + 1)))
      return "broker '" + std::string{broker} + "': expected a port from 1 to 65535 after the host";
  }
  if (host.empty() || host.find(':') != std::string_view::npos)
    return "broker '" + std::string{broker} + "' is not HOST[:PORT]";
  return {};
}

/// Why Kafka would refuse `topic` as a name, "" if it would not: 1 to 249 of
/// a-z A-Z 0-9 . _ -, not "." or "..".
std::string topic_problem(const std::string& topic) {
  if (topic.empty()) return "no topic after the brokers";
  if (topic.size() > 249) return "a topic name is at most 249 characters";
  if (topic == "." || topic == "..") return "'" + topic + "' is not a topic name";
  for (const char ch : topic)
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
          ch == '-'))
      return "topic '" + topic + "': a topic name holds only a-z A-Z 0-9 . _ -";
  return {};
}

}  // namespace

kafka_url parse_kafka_url(const std::string& value, const char* flag, bool group_allowed) {
  const std::string form =
      group_allowed ? "kafka://BROKER[,BROKER...]/TOPIC[/GROUP]" : "kafka://BROKER[,BROKER...]/TOPIC";
  const auto bad = [&](const std::string& why) {
    return usage_error(std::string{"--"} + flag + " '" + value + "': expected " + form +
                       (why.empty() ? "" : " (" + why + ")"));
  };
  if (!is_kafka(value)) throw bad("not a kafka:// URL");
  const auto rest = value.substr(8);
  const auto slash = rest.find('/');
  if (slash == std::string::npos) throw bad("no topic after the brokers");
  if (slash == 0) throw bad("no broker");
  kafka_url u;
  u.brokers = rest.substr(0, slash);
  for (std::size_t from = 0;;) {
    const auto comma = u.brokers.find(',', from);
    const auto why = broker_problem(std::string_view{u.brokers}.substr(from, comma - from));
    if (!why.empty()) throw bad(why);
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  const auto path = rest.substr(slash + 1);
  const auto next = path.find('/');
  u.topic = path.substr(0, next);
  if (const auto why = topic_problem(u.topic); !why.empty()) throw bad(why);
  if (next == std::string::npos) return u;
  if (!group_allowed) throw bad("a group belongs to --input only");
  u.group = path.substr(next + 1);
  if (u.group.empty()) throw bad("an empty group after the topic");
  if (u.group.find('/') != std::string::npos) throw bad("a '/' after the group");
  return u;
}

std::function<bool()> input_stop(const cli& c) {
  const bool stops = c.checkpoint_dir.empty();  // with checkpoints the run is cancelled instead
  const auto duration = std::chrono::duration<double>{c.duration};
  if (!stops && !(duration.count() > 0)) return {};
  const auto start = std::chrono::steady_clock::now();
  return [start, duration, stops] {
    if (stops && stop_requested()) return true;
    return duration.count() > 0 && std::chrono::steady_clock::now() - start >= duration;
  };
}

#if TROUPE_APPS_NATS
troupe::nats::source_config nats_input(const cli& c, const std::string& app) {
  const auto u = parse_nats_url(c.input, "input", true);
  troupe::nats::source_config s;
  s.connection.servers = u.server;
  s.connection.name = "troupe-" + app;
  s.stream = u.first;
  s.durable = u.second.empty() ? "troupe-" + app : u.second;
  s.bounded = c.passes != 0;
  s.stop = input_stop(c);
  return s;
}

troupe::nats::sink_config nats_output(const cli& c) {
  const auto u = parse_nats_url(c.output, "output", false);
  troupe::nats::sink_config s;
  s.connection.servers = u.server;
  s.subject = u.first;
  return s;
}
#endif

#if TROUPE_APPS_KAFKA
troupe::kafka::source_config kafka_input(const cli& c, const std::string& app) {
  const auto u = parse_kafka_url(c.input, "input", true);
  troupe::kafka::source_config s;
  s.client.brokers = u.brokers;
  s.topic = u.topic;
  s.group = u.group.empty() ? "troupe-" + app : u.group;
  s.assign = troupe::kafka::assignment::static_partitions;
  s.bounded = c.passes != 0;
  s.stop = input_stop(c);
  return s;
}

troupe::kafka::sink_config kafka_output(const cli& c) {
  const auto u = parse_kafka_url(c.output, "output", false);
  troupe::kafka::sink_config s;
  s.client.brokers = u.brokers;
  s.topic = u.topic;
  return s;
}
#endif

}  // namespace troupe_apps
