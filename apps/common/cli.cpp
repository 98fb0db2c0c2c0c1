#include "cli.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

namespace troupe_apps {

namespace {

template <class T>
T number(const std::string& flag, const std::string& text) {
  T v{};
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc{} || p != end) throw usage_error(flag + ": expected a number, got '" + text + "'");
  return v;
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

std::string cli::usage(const std::string& program, const std::vector<std::string>& operators) {
  std::ostringstream o;
  o << "usage: " << program << " [flags]\n"
    << "  --duration SECONDS   run this long (default 10, or until --passes are done)\n"
    << "  --rate N             tuples per second per source replica (0 = full speed, default)\n"
    << "  --parallelism LIST   replicas per operator, comma-separated, in this order:";
  for (auto& op : operators) o << ' ' << op;
  o << "\n"
    << "  --input PATH         input file (loaded into memory first, replayed cyclically)\n"
    << "  --batch N            elements a node handles per activation (default 512)\n"
    << "  --json PATH          write the results as JSON\n"
    << "  --passes N           replay the input N times, then end of stream\n"
    << "  --output PATH        write what reaches the sink, one tuple per line\n"
    << "  --help               this text\n"
    << "environment: TROUPE_WORKERS, TROUPE_POLLING (aggressive, moderate, relaxed),\n"
    << "  TROUPE_WORKER_AFFINITY, ... configure the runtime (see troupe::config)\n";
  return o.str();
}

cli cli::parse(int argc, char** argv, const std::vector<std::string>& operators, std::string default_input,
               const std::map<std::string, std::string>& extra) {
  cli c;
  c.input = std::move(default_input);
  c.extra = extra;
  bool duration_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      c.help = true;
      continue;
    }
    if (flag.rfind("--", 0) != 0) throw usage_error("unexpected argument '" + flag + "' (flags start with --)");
    if (i + 1 >= argc) throw usage_error(flag + ": missing value");
    const std::string value = argv[++i];
    if (flag == "--duration") {
      c.duration = parse_real(flag, value);
      duration_given = true;
    } else if (flag == "--rate") {
      c.rate = parse_real(flag, value);
    } else if (flag == "--input") {
      c.input = value;
    } else if (flag == "--batch") {
      c.batch = number<std::size_t>(flag, value);
      if (c.batch == 0) throw usage_error("--batch: must be at least 1");
    } else if (flag == "--json") {
      c.json = value;
    } else if (flag == "--passes") {
      c.passes = number<std::uint64_t>(flag, value);
    } else if (flag == "--output") {
      c.output = value;
    } else if (flag == "--parallelism") {
      std::stringstream in{value};
      for (std::string part; std::getline(in, part, ',');) {
        auto n = number<std::size_t>(flag, part);
        if (n == 0) throw usage_error("--parallelism: every operator needs at least 1 replica, got '" + value + "'");
        c.parallelism.push_back(n);
      }
      if (c.parallelism.size() != operators.size())
        throw usage_error("--parallelism: expected " + std::to_string(operators.size()) +
                          " numbers (one per operator), got '" + value + "'");
    } else if (auto it = c.extra.find(flag.substr(2)); it != c.extra.end()) {
      it->second = value;
    } else {
      throw usage_error("unknown flag '" + flag + "'");
    }
  }
  if (!duration_given && c.passes == 0) c.duration = 10;
  return c;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream f{path};
  if (!f) throw std::runtime_error("cannot read input file '" + path + "'");
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  if (lines.empty()) throw std::runtime_error("input file '" + path + "' is empty");
  return lines;
}

}  // namespace troupe_apps
