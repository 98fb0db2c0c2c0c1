// connectors.hpp: the applications' input and output in a log instead of a
// file (docs/connectors.md):
//   --input  nats://HOST:PORT/STREAM[/DURABLE]   a NATS JetStream stream, read
//            through the durable consumer DURABLE (default troupe-<app>);
//            with --passes, what the stream holds, then the end (bounded);
//            else on until --duration or SIGINT
//   --output nats://HOST:PORT/SUBJECT            each line a message, exactly
//            once with --checkpoint-dir
// wc and fd read from NATS; every application's sink writes to it. Built
// with troupe::nats (libnats-dev); without it such a flag is a usage error.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <troupe/troupe.hpp>

#include "cli.hpp"

#if TROUPE_APPS_NATS
#include <troupe/nats.hpp>
#endif

namespace troupe_apps {

/// Whether a flag's value names a NATS stream or subject ("nats://...").
bool is_nats(const std::string& value) noexcept;

/// What --output gives output_file: "" when the sinks write it themselves
/// (exactly once with --checkpoint-dir, or a nats:// output).
std::string output_file_path(const cli& c);

/// A NATS URL taken apart: the server ("nats://HOST:PORT") and the path's
/// segments. Throws usage_error naming the flag for anything else.
struct nats_url {
  std::string server;
  std::string first, second;  // STREAM and DURABLE, or SUBJECT and ""
};
nats_url parse_nats_url(const std::string& value, const char* flag, bool second_allowed);

#if TROUPE_APPS_NATS
/// The source settings of --input nats://... for application `app`.
troupe::nats::source_config nats_input(const cli& c, const std::string& app);
/// The sink settings of --output nats://...
troupe::nats::sink_config nats_output(const cli& c);

/// Publishes lines as they are.
struct text_encoder {
  std::string_view operator()(const std::string& s) const noexcept { return s; }
};
using line_writer = troupe::nats::sink_writer<std::string, text_encoder>;

/// The source of --input nats://...: each message parsed by
/// parse(std::string_view, T&) -> bool (false: counted in `malformed` and
/// skipped), stamped with the time it was read.
template <class T, class Parse>
auto nats_source_of(const cli& c, const std::string& app, Parse parse,
                    std::shared_ptr<std::atomic<std::uint64_t>> malformed) {
  return troupe::nats::source<T>(nats_input(c, app),
                                 [parse, malformed](const troupe::nats::message& m, troupe::stream::emitter<T>& out) {
                                   T v{};
                                   if (!parse(m.data, v)) {
                                     malformed->fetch_add(1, std::memory_order_relaxed);
                                     return;
                                   }
                                   v.stamp = troupe::stream::now();
                                   out.send_next(std::move(v));
                                 });
}
#endif

/// Runs `run(source)` with the source of the application's input: the NATS
/// source for --input nats://... (each message parsed by `parse`, as
/// nats_source_of), else `file()`, the replay source of the input file.
/// Returns run's result with the malformed messages added.
template <class T, class Parse, class File, class Run>
auto with_source(const cli& c, const std::string& app, Parse parse, File file, Run run) {
  if (!is_nats(c.input)) return run(file());
#if TROUPE_APPS_NATS
  auto malformed = std::make_shared<std::atomic<std::uint64_t>>(0);
  auto r = run(nats_source_of<T>(c, app, parse, malformed));
  r.malformed += malformed->load();
  return r;
#else
  (void)parse;
  throw usage_error("--input " + c.input + ": this build has no troupe::nats (libnats-dev)");
#endif
}

}  // namespace troupe_apps
