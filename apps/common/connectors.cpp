#include "connectors.hpp"

#include <chrono>

#include "app.hpp"

namespace troupe_apps {

bool is_nats(const std::string& value) noexcept { return value.rfind("nats://", 0) == 0; }

std::string output_file_path(const cli& c) {
  if (!c.checkpoint_dir.empty() || is_nats(c.output)) return {};
  return c.output;
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

#if TROUPE_APPS_NATS
troupe::nats::source_config nats_input(const cli& c, const std::string& app) {
  const auto u = parse_nats_url(c.input, "input", true);
  troupe::nats::source_config s;
  s.connection.servers = u.server;
  s.connection.name = "troupe-" + app;
  s.stream = u.first;
  s.durable = u.second.empty() ? "troupe-" + app : u.second;
  s.bounded = c.passes != 0;
  const auto start = std::chrono::steady_clock::now();
  const auto duration = std::chrono::duration<double>{c.duration};
  const bool stops = c.checkpoint_dir.empty();  // with checkpoints the run is cancelled instead
  s.stop = [start, duration, stops] {
    if (stops && stop_requested()) return true;
    return duration.count() > 0 && std::chrono::steady_clock::now() - start >= duration;
  };
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

}  // namespace troupe_apps
