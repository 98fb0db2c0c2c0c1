// connectors.hpp: the applications' input and output in a log instead of a
// file (docs/connectors.md):
//   --input  nats://HOST:PORT/STREAM[/DURABLE]   a NATS JetStream stream, read
//            through the durable consumer DURABLE (default troupe-<app>)
//   --input  kafka://BROKER[,BROKER...]/TOPIC[/GROUP]   a Kafka topic, its
//            partitions spread over the source's replicas (static), offsets
//            committed to GROUP (default troupe-<app>), a fresh run going on
//            from there; BROKER is HOST[:PORT]
//            either input: with --passes, what the log holds when the run
//            starts, then the end (bounded); else on until --duration or
//            SIGINT; each message's data (record's value) is parsed like a
//            line of the input file
//   --output nats://HOST:PORT/SUBJECT            each line a message
//   --output kafka://BROKER[,BROKER...]/TOPIC    each line a record's value
//            either output: exactly once with --checkpoint-dir (NATS: message
//            ids; Kafka: a transaction per checkpoint)
// wc and fd read from a log; every application's sink writes to one. Built
// with troupe::nats (libnats-dev) and troupe::kafka (librdkafka-dev); without
// the module such a flag is a usage error naming it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <troupe/troupe.hpp>

#include "cli.hpp"

#if TROUPE_APPS_NATS
#include <troupe/nats.hpp>
#endif
#if TROUPE_APPS_KAFKA
#include <troupe/kafka.hpp>
#endif

namespace troupe_apps {

/// Whether a flag's value names a NATS stream or subject ("nats://...").
bool is_nats(const std::string& value) noexcept;
/// Whether a flag's value names a Kafka topic ("kafka://...").
bool is_kafka(const std::string& value) noexcept;
/// Whether a flag's value names a log (NATS or Kafka) rather than a file.
inline bool is_log(const std::string& value) noexcept { return is_nats(value) || is_kafka(value); }

/// What --output gives output_file: "" when the sinks write it themselves
/// (exactly once with --checkpoint-dir, or a nats:// or kafka:// output).
std::string output_file_path(const cli& c);

/// A NATS URL taken apart: the server ("nats://HOST:PORT") and the path's
/// segments. Throws usage_error naming the flag for anything else.
struct nats_url {
  std::string server;
  std::string first, second;  // STREAM and DURABLE, or SUBJECT and ""
};
nats_url parse_nats_url(const std::string& value, const char* flag, bool second_allowed);

/// A Kafka URL taken apart: the brokers ("HOST:PORT,HOST:PORT", librdkafka's
/// bootstrap.servers), the topic and the group ("" when not given). Throws
/// usage_error naming the flag and the expected form for anything else (no
/// broker, an empty one, a bad port, no topic, a topic Kafka would refuse,
/// a group where none is allowed).
struct kafka_url {
  std::string brokers;
  std::string topic;
  std::string group;
};
kafka_url parse_kafka_url(const std::string& value, const char* flag, bool group_allowed);

/// The stop function of a log input: true once --duration has passed, or
/// (without --checkpoint-dir: with it the run is cancelled instead) once
/// stop_requested(); empty when neither can happen. The clock starts now.
std::function<bool()> input_stop(const cli& c);

/// Writes lines as they are (a message's data, a record's value).
struct text_encoder {
  std::string_view operator()(const std::string& s) const noexcept { return s; }
};

/// A log input's decoder body: each message parsed by
/// parse(std::string_view, T&) -> bool (false: counted in `malformed` and
/// skipped), stamped with the time it was read.
template <class T, class Parse>
auto parsing(Parse parse, std::shared_ptr<std::atomic<std::uint64_t>> malformed) {
  return [parse, malformed](std::string_view data, troupe::stream::emitter<T>& out) {
    T v{};
    if (!parse(data, v)) {
      malformed->fetch_add(1, std::memory_order_relaxed);
      return;
    }
    v.stamp = troupe::stream::now();
    out.send_next(std::move(v));
  };
}

#if TROUPE_APPS_NATS
/// The source settings of --input nats://... for application `app`.
troupe::nats::source_config nats_input(const cli& c, const std::string& app);
/// The sink settings of --output nats://...
troupe::nats::sink_config nats_output(const cli& c);

using nats_line_writer = troupe::nats::sink_writer<std::string, text_encoder>;

/// The source of --input nats://... (one replica: a durable consumer).
template <class T, class Parse>
auto nats_source_of(const cli& c, const std::string& app, Parse parse,
                    std::shared_ptr<std::atomic<std::uint64_t>> malformed) {
  return troupe::nats::source<T>(
      nats_input(c, app), [body = parsing<T>(std::move(parse), std::move(malformed))](
                              const troupe::nats::message& m, troupe::stream::emitter<T>& out) { body(m.data, out); });
}
#endif

#if TROUPE_APPS_KAFKA
/// The source settings of --input kafka://... for application `app`.
troupe::kafka::source_config kafka_input(const cli& c, const std::string& app);
/// The sink settings of --output kafka://...
troupe::kafka::sink_config kafka_output(const cli& c);

using kafka_line_writer = troupe::kafka::sink_writer<std::string, text_encoder>;

/// The source of --input kafka://... (each replica reads its share of the
/// partitions).
template <class T, class Parse>
auto kafka_source_of(const cli& c, const std::string& app, Parse parse,
                     std::shared_ptr<std::atomic<std::uint64_t>> malformed) {
  return troupe::kafka::source<T>(kafka_input(c, app), [body = parsing<T>(std::move(parse), std::move(malformed))](
                                                           const troupe::kafka::message& m,
                                                           troupe::stream::emitter<T>& out) { body(m.value, out); });
}
#endif

/// The usage error of a nats:// or kafka:// flag in a build without its
/// module: "--<flag> VALUE: this build has no troupe::kafka (librdkafka-dev)".
usage_error missing_module(const char* flag, const std::string& value);

/// Runs `run(source)` with the source of the application's input: the NATS
/// source for --input nats://..., the Kafka source for --input kafka://...
/// (each message parsed by `parse`, as parsing), else `file()`, the replay
/// source of the input file. Returns run's result with the malformed
/// messages added.
template <class T, class Parse, class File, class Run>
auto with_source(const cli& c, const std::string& app, Parse parse, File file, Run run) {
  if (!is_log(c.input)) return run(file());
  [[maybe_unused]] auto malformed = std::make_shared<std::atomic<std::uint64_t>>(0);
  if (is_nats(c.input)) {
#if TROUPE_APPS_NATS
    auto r = run(nats_source_of<T>(c, app, parse, malformed));
    r.malformed += malformed->load();
    return r;
#endif
  } else {
#if TROUPE_APPS_KAFKA
    auto r = run(kafka_source_of<T>(c, app, parse, malformed));
    r.malformed += malformed->load();
    return r;
#endif
  }
  (void)parse, (void)app;
  throw missing_module("input", c.input);
}

}  // namespace troupe_apps
