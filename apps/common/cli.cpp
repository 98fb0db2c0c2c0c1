// The flag parser is written here rather than taken from CLI11 (Debian's
// libcli11-dev): the applications' flags are one table (common_flags below
// plus each application's app_flag list) that both the parser and usage()
// read, so --help cannot forget a flag, and the messages name the flag, the
// value and the rule in our words (tests/apps_test.cpp and
// tests/apps_cli_test.cpp check them). With CLI11 the same table would still
// be needed to fill cli::extra (which the benchmarks and tests set directly),
// every message would change to CLI11's wording, and one header of ~10,000
// lines would join the build for a loop of ~60 lines.
#include "cli.hpp"
#include "connectors.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace troupe_apps {

namespace {

/// A common flag: name, value placeholder, default (as the usage shows it)
/// and help. Every flag the parser accepts is here or in the app's list.
struct common_flag {
  const char* name;
  const char* metavar;
  const char* default_text;
  const char* help;
};

constexpr common_flag common_flags[] = {
    {"duration", "SECONDS", "10, or none with --passes",
     "run this long (a number > 0); with --passes, whichever ends first"},
    {"rate", "N", "0", "tuples per second per source replica (0: full speed)"},
    {"parallelism", "LIST", "1 per operator", "replicas per operator, comma-separated, in this order:"},
    {"input", "PATH", "",
     "input file, loaded into memory first and replayed cyclically; troupe-wc and troupe-fd also read "
     "nats://HOST:PORT/STREAM[/DURABLE] (NATS JetStream, durable default troupe-<app>) or "
     "kafka://BROKER[,BROKER...]/TOPIC[/GROUP] (Kafka, the partitions spread over the source's replicas, offsets "
     "committed to GROUP, default troupe-<app>); from either, with --passes, what it holds, then the end"},
    {"max-line", "BYTES", "1048576", "longest input line accepted; a longer one ends the run with an error"},
    {"batch", "N", "512", "elements a node handles per activation"},
    {"json", "PATH", "none", "write the run summary as JSON (also after an interrupt)"},
    {"passes", "N", "none: until --duration", "replay the input N times (N >= 1), then end of stream"},
    {"output", "PATH", "none",
     "write what reaches the sink, one tuple per line; or publish each to nats://HOST:PORT/SUBJECT, or produce each "
     "to kafka://BROKER[,BROKER...]/TOPIC (either exactly once with --checkpoint-dir; Kafka: in transactions)"},
    {"metrics-port", "PORT", "none",
     "serve live metrics while it runs: Prometheus text at /metrics and a dashboard at / on 127.0.0.1:PORT (0: any "
     "free port; the address is printed)"},
    {"checkpoint-dir", "PATH", "none",
     "take checkpoints there; rerun the same command after a crash to resume from the last one, with --output "
     "written exactly once (needs --passes; a split run: the same directory, one all ranks see, on every rank; "
     "docs/fault-tolerance.md)"},
    {"checkpoint-interval", "MS", "1000", "milliseconds between checkpoints (with --checkpoint-dir)"},
    {"state-backend", "NAME", "heap",
     "where keyed state lives with --checkpoint-dir: heap (memory, saved into the checkpoint files) or rocksdb "
     "(RocksDB under the checkpoint directory; checkpoints link its files: incremental)"},
};

bool is_common(const std::string& name) {
  for (auto& f : common_flags)
    if (name == f.name) return true;
  return false;
}

constexpr std::uint64_t no_limit = ~std::uint64_t{0};

/// A flag followed by another flag instead of its value.
usage_error missing_value(const std::string& flag, const std::string& next) {
  return usage_error(flag + ": missing value (got the flag '" + next + "' instead)");
}

}  // namespace

double parse_real(const std::string& flag, const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || !std::isfinite(v))
    throw usage_error(flag + ": expected a number, got '" + text + "'");
  if (v < 0) throw usage_error(flag + ": must not be negative, got '" + text + "'");
  return v;
}

std::uint64_t parse_whole(const std::string& flag, const std::string& text, std::uint64_t lo, std::uint64_t hi) {
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc::result_out_of_range && p == end) v = no_limit;
  else if (ec != std::errc{} || p != end || text.empty())
    throw usage_error(flag + ": expected a whole number, got '" + text + "'");
  if (hi == no_limit && v < lo) throw usage_error(flag + ": must be at least " + std::to_string(lo));
  if (v < lo || v > hi)
    throw usage_error(flag + ": must be from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got '" + text +
                      "'");
  return v;
}

std::string cli::usage(const std::string& program, const std::vector<std::string>& operators,
                       const std::string& default_input, const std::vector<app_flag>& extra) {
  std::ostringstream o;
  auto line = [&o](const std::string& name, const std::string& metavar, const std::string& help,
                   const std::string& default_text) {
    std::string head = "  --" + name + (metavar.empty() ? "" : " " + metavar);
    if (head.size() < 26) head.resize(26, ' ');
    else head += ' ';
    o << head << help;
    if (!default_text.empty()) o << " (default: " << default_text << ')';
    o << '\n';
  };
  o << "usage: " << program << " [flags]    (a flag's value follows it, or is joined with '=')\n";
  for (auto& f : common_flags) {
    std::string help = f.help;
    std::string default_text = f.default_text;
    if (std::string{f.name} == "parallelism")
      for (auto& op : operators) help += ' ' + op;
    if (std::string{f.name} == "input")
      default_text = default_input.empty() ? "none: generated, see docs/apps.md" : default_input;
    line(f.name, f.metavar, help, default_text);
  }
  line("help", "", "print this text and exit", "");
  if (!extra.empty()) {
    o << program << "'s own flags:\n";
    for (auto& f : extra) line(f.name, f.metavar, f.help, f.value.empty() ? "none" : f.value);
  }
  o << "signals: SIGINT or SIGTERM (Ctrl-C) stops the sources and drains the graph, then the summary is printed,\n"
    << "  the --json and --output files are written and the exit status is 128 + the signal (130, 143).\n"
    << "  A second signal exits at once, writing nothing.\n"
    << "environment: TROUPE_WORKERS, TROUPE_POLLING (aggressive, moderate, relaxed),\n"
    << "  TROUPE_WORKER_AFFINITY, ... configure the runtime (see troupe::config)\n";
  return o.str();
}

cli cli::parse(int argc, char** argv, const std::vector<std::string>& operators, std::string default_input,
               const std::vector<app_flag>& extra) {
  cli c;
  c.input = std::move(default_input);
  for (auto& f : extra) c.extra[f.name] = f.value;
  bool duration_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      c.help = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2)
      throw usage_error("unexpected argument '" + arg + "' (flags start with --; see --help)");
    // The flag is checked before its value is looked for, so that an unknown
    // flag given last is reported as unknown, not as missing its value.
    std::string name = arg.substr(2);
    std::string value;
    const auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const std::string flag = "--" + name;
    if (name == "help") throw usage_error("--help: takes no value, got '" + value + "'");
    if (!is_common(name) && c.extra.count(name) == 0) throw usage_error("unknown flag '" + flag + "'");
    if (eq == std::string::npos) {
      if (i + 1 >= argc) throw usage_error(flag + ": missing value");
      value = argv[++i];
      if (value.rfind("--", 0) == 0 && value.size() > 2) throw missing_value(flag, value);
    }
    if (name == "duration") {
      c.duration = parse_real(flag, value);
      if (c.duration == 0)
        throw usage_error(
            "--duration: must be greater than 0, got '" + value +
            "' (for a run that ends when the input has been replayed, give --passes N without --duration)");
      duration_given = true;
    } else if (name == "rate") {
      c.rate = parse_real(flag, value);
    } else if (name == "input") {
      if (value.empty()) throw usage_error("--input: expected a path, got ''");
      if (is_nats(value)) (void)parse_nats_url(value, "input", true);
      if (is_kafka(value)) (void)parse_kafka_url(value, "input", true);
      c.input = value;
    } else if (name == "max-line") {
      c.max_line = static_cast<std::size_t>(parse_whole(flag, value, 1, no_limit));
    } else if (name == "batch") {
      c.batch = static_cast<std::size_t>(parse_whole(flag, value, 1, no_limit));
    } else if (name == "json") {
      c.json = value;
    } else if (name == "passes") {
      c.passes = parse_whole(flag, value, 1, no_limit);
    } else if (name == "output") {
      if (is_nats(value)) (void)parse_nats_url(value, "output", false);
      if (is_kafka(value)) (void)parse_kafka_url(value, "output", false);
      c.output = value;
    } else if (name == "metrics-port") {
      c.metrics_port = static_cast<int>(parse_whole(flag, value, 0, 65535));
    } else if (name == "checkpoint-dir") {
      if (value.empty()) throw usage_error("--checkpoint-dir: expected a path, got ''");
      c.checkpoint_dir = value;
    } else if (name == "checkpoint-interval") {
      c.checkpoint_interval_ms = parse_whole(flag, value, 1, 24ULL * 3600 * 1000);
    } else if (name == "state-backend") {
      if (value != "heap" && value != "rocksdb")
        throw usage_error("--state-backend: expected heap or rocksdb, got '" + value + "'");
      c.state_backend = value;
    } else if (name == "parallelism") {
      c.parallelism.clear();
      std::stringstream in{value};
      for (std::string part; std::getline(in, part, ',');) {
        std::size_t n = 0;
        auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), n);
        if (ec != std::errc{} || p != part.data() + part.size() || part.empty())
          throw usage_error("--parallelism: expected whole numbers separated by commas, got '" + value + "'");
        if (n == 0) throw usage_error("--parallelism: every operator needs at least 1 replica, got '" + value + "'");
        c.parallelism.push_back(n);
      }
      if (c.parallelism.size() != operators.size())
        throw usage_error("--parallelism: expected " + std::to_string(operators.size()) +
                          " numbers (one per operator), got '" + value + "'");
    } else {
      c.extra[name] = value;
    }
  }
  if (!c.checkpoint_dir.empty() && (duration_given || c.passes == 0))
    throw usage_error(
        "--checkpoint-dir: needs --passes N and no --duration (a run that ends after a time could not be resumed "
        "to the same end)");
  if (c.state_backend != "heap" && c.checkpoint_dir.empty())
    throw usage_error("--state-backend: needs --checkpoint-dir (keyed state lives there)");
  if (!duration_given && c.passes == 0) c.duration = 10;
  return c;
}

namespace {

/// Closes a file descriptor when it goes out of scope.
struct descriptor {
  int fd;
  ~descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::vector<std::string> read_lines(const std::string& path, std::size_t max_line, const std::string& what) {
  const std::string name = what + " '" + path + "'";
  auto error = [&](const std::string& text) { return std::runtime_error(name + text); };
  const descriptor in{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) throw error(": cannot read it: " + std::string{std::strerror(errno)});
  struct stat st{};
  if (::fstat(in.fd, &st) == 0 && S_ISDIR(st.st_mode)) throw error(" is a directory, not a file");

  std::vector<std::string> lines;
  std::string current;  // the line being read, at most max_line + 1 bytes (a '\r' may follow the line)
  std::size_t number = 1;
  std::vector<char> buffer(std::size_t{1} << 16);
  auto too_long = [&] {
    return error(", line " + std::to_string(number) + ": longer than " + std::to_string(max_line) +
                 " bytes (the --max-line limit)");
  };
  auto finish_line = [&] {
    if (!current.empty() && current.back() == '\r') current.pop_back();
    if (current.size() > max_line) throw too_long();
    lines.push_back(std::move(current));
    current.clear();
    ++number;
  };
  for (;;) {
    const ssize_t got = ::read(in.fd, buffer.data(), buffer.size());
    if (got < 0) {
      if (errno == EINTR) continue;
      throw error(": cannot read it: " + std::string{std::strerror(errno)});
    }
    if (got == 0) break;
    const char* p = buffer.data();
    const char* const end = p + got;
    while (p < end) {
      const auto* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
      const char* stop = nl != nullptr ? nl : end;
      const auto n = static_cast<std::size_t>(stop - p);
      if (std::memchr(p, '\0', n) != nullptr)
        throw error(" is not a text file (a NUL byte on line " + std::to_string(number) + ")");
      if (current.size() + n > max_line + 1) throw too_long();
      current.append(p, n);
      if (nl == nullptr) break;
      finish_line();
      p = nl + 1;
    }
  }
  if (!current.empty()) finish_line();
  if (lines.empty()) throw error(" is empty");
  return lines;
}

}  // namespace troupe_apps
