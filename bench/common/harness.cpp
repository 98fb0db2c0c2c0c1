// troupe benchmark harness: process isolation, statistics, table, JSON lines.
#include "common/harness.hpp"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/line_probe.hpp"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define TROUPE_BENCH_CALLGRIND 1
#else
#define TROUPE_BENCH_CALLGRIND 0
#endif

namespace bench {

// -- instruction counting -----------------------------------------------------

namespace {

/// The environment variable through which the outer harness tells the one it
/// runs under callgrind where callgrind writes its files.
constexpr const char* callgrind_dir_env = "TROUPE_BENCH_CALLGRIND_DIR";

/// Set in a child process that counts instructions.
bool counting = false;
bool region_open = false;
bool region_dumped = false;

void zero_counters() {
#if TROUPE_BENCH_CALLGRIND
  CALLGRIND_ZERO_STATS;
#endif
}

void dump_counters() {
#if TROUPE_BENCH_CALLGRIND
  CALLGRIND_DUMP_STATS_AT("measured region");
#endif
}

bool on_valgrind() {
#if TROUPE_BENCH_CALLGRIND
  return RUNNING_ON_VALGRIND != 0;
#else
  return false;
#endif
}

/// The instructions of this process's one dump (callgrind names it
/// <dir>/cg.<pid>.1 and writes it before the client request returns).
double read_dumped_instructions() {
  const char* dir = std::getenv(callgrind_dir_env);
  std::string path = std::string{dir != nullptr ? dir : "."} + "/cg." + std::to_string(::getpid()) + ".1";
  std::ifstream in{path};
  if (!in) throw std::runtime_error("instruction count: cannot read callgrind's dump " + path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("summary:", 0) == 0) return std::strtod(line.c_str() + 8, nullptr);
  throw std::runtime_error("instruction count: no 'summary:' line in " + path);
}

}  // namespace

void detail::region_begin() {
  if (!counting || region_dumped) return;
  zero_counters();
  region_open = true;
}

void detail::region_end() {
  if (!counting || !region_open) return;
  dump_counters();
  region_open = false;
  region_dumped = true;
}

// -- params -------------------------------------------------------------------

params& params::set(const std::string& key, std::int64_t value) {
  for (auto& kv : kv_) {
    if (kv.first == key) {
      kv.second = value;
      return *this;
    }
  }
  kv_.emplace_back(key, value);
  return *this;
}

std::int64_t params::get(const std::string& key) const {
  for (auto& kv : kv_)
    if (kv.first == key) return kv.second;
  throw std::logic_error("benchmark parameter '" + key + "' is not set");
}

std::int64_t params::get_or(const std::string& key, std::int64_t fallback) const {
  for (auto& kv : kv_)
    if (kv.first == key) return kv.second;
  return fallback;
}

bool params::has(const std::string& key) const {
  for (auto& kv : kv_)
    if (kv.first == key) return true;
  return false;
}

void check_eq(const std::string& what, std::int64_t expected, std::int64_t got) {
  if (expected != got)
    throw std::runtime_error(what + ": expected " + std::to_string(expected) + ", got " + std::to_string(got));
}

// -- ready-made metrics -------------------------------------------------------

metric wall_time_metric() {
  return metric{"wall_s", "s", false, [](const sample& s, const params&) { return s.wall_s; }};
}

metric rate_metric(std::string name, std::string unit, std::function<double(const params&)> count) {
  return metric{std::move(name), std::move(unit), true,
                [count](const sample& s, const params& p) { return count(p) / s.wall_s; }};
}

metric ns_per_item_metric(std::string name, std::string unit, std::function<double(const params&)> count) {
  return metric{std::move(name), std::move(unit), false,
                [count](const sample& s, const params& p) { return s.wall_s * 1e9 / count(p); }};
}

namespace {

// -- small utilities ----------------------------------------------------------

struct options {
  int runs = 0;  // 0: spec default
  bool full = false;
  bool instructions = false;
  bool quiet = false;
  double timeout_s = 0;  // 0: spec default
  std::vector<std::string> impls;
  std::vector<std::string> variants;  // labels, or their first words
  std::string json_path;
  // A run is in the far phase when a cache line's round trip, probed just
  // before and just after it, took at least this long (ns) both times.
  double far_ns = 200;
};

double median(std::vector<double> xs) {
  if (xs.empty()) return NAN;
  std::sort(xs.begin(), xs.end());
  auto n = xs.size();
  return n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

double min_of(const std::vector<double>& xs) { return xs.empty() ? NAN : *std::min_element(xs.begin(), xs.end()); }

double max_of(const std::vector<double>& xs) { return xs.empty() ? NAN : *std::max_element(xs.begin(), xs.end()); }

std::string json_escape(const std::string& in) {
  std::string out;
  out.reserve(in.size() + 2);
  out += '"';
  for (unsigned char c : in) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.10g", x);
  return buf;
}

std::string json_numbers(const std::vector<double>& xs) {
  std::string out = "[";
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i > 0) out += ", ";
    out += json_number(xs[i]);
  }
  return out + "]";
}

std::string json_params(const params& p) {
  std::string out = "{";
  bool first = true;
  for (auto& [k, v] : p.items()) {
    if (!first) out += ", ";
    first = false;
    out += json_escape(k) + ": " + std::to_string(v);
  }
  return out + "}";
}

std::string machine_description() {
  std::string model;
  std::ifstream in{"/proc/cpuinfo"};
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto pos = line.find(':');
      if (pos != std::string::npos) {
        model = line.substr(pos + 1);
        auto b = model.find_first_not_of(" \t");
        model = b == std::string::npos ? "" : model.substr(b);
      }
      break;
    }
  }
  if (model.empty()) model = "unknown cpu";
  utsname u{};
  if (uname(&u) == 0) {
    model += ", ";
    model += u.sysname;
    model += ' ';
    model += u.release;
    model += ' ';
    model += u.machine;
  }
  return model;
}

std::string utc_timestamp() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// Human-friendly number with an SI suffix (k, M, G) and 3-4 digits.
std::string human(double x) {
  if (!std::isfinite(x)) return "-";
  char buf[32];
  double a = std::fabs(x);
  if (a >= 1e9) std::snprintf(buf, sizeof buf, "%.3g G", x / 1e9);
  else if (a >= 1e6) std::snprintf(buf, sizeof buf, "%.3g M", x / 1e6);
  else if (a >= 1e4) std::snprintf(buf, sizeof buf, "%.3g k", x / 1e3);
  else std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

std::string fixed(double x, int decimals) {
  if (!std::isfinite(x)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

void print_usage(const spec& s, const char* argv0) {
  std::printf(
      "usage: %s [--runs N] [--full | --instructions] [--impl a,b] [--variant a,b] "
      "[--json PATH] [--quiet] [--timeout S] [--far-ns NS]\n"
      "  %s: %s\n"
      "  --runs N     runs per implementation and variant (default %d, --full "
      "%d, --instructions 1)\n"
      "  --full       full-size parameters (default: quick parameters)\n"
      "  --instructions  count instructions under valgrind's callgrind (small\n"
      "               one-worker parameters; the measured region of every thread)\n"
      "  --impl a,b   only these implementations (available:",
      argv0, s.name.c_str(), s.description.c_str(), s.default_runs, s.full_runs);
  for (auto& i : s.impls) std::printf(" %s", i.name.c_str());
  std::printf(
      ")\n"
      "  --variant a,b  only the variants labelled a or b (spaces ignored), or\n"
      "               whose label's first word is a or b\n"
      "  --json PATH  append one JSON object per line per (impl, metric, "
      "variant)\n"
      "  --quiet      no per-run progress on stderr\n"
      "  --timeout S  kill a run after S seconds (default %g)\n"
      "  --far-ns NS  a run whose probes (a cache line's round trip between two\n"
      "               threads, just before and after it) both take NS or more\n"
      "               is in the far phase, both less: near (default 200);\n"
      "               results are reported per phase\n",
      s.timeout_s);
}

// -- child processes ----------------------------------------------------------

enum class outcome { ok, skipped, failed };

struct run_result {
  outcome kind = outcome::failed;
  sample s;
  std::string message;  // skip reason or failure description
  double user_s = 0;
  double sys_s = 0;
  double peak_rss_kb = 0;
  bool timed_out = false;
  // A cache line's round trip just before and just after the run (ns; 0:
  // not probed, as under --instructions) and the phase they put it in.
  double rtt_before_ns = 0, rtt_after_ns = 0;
  std::string phase;
};

void write_all(int fd, const std::string& data) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    auto n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

std::string serialize(const sample& s) {
  std::string out;
  char buf[64];
  std::snprintf(buf, sizeof buf, "OK %a\n", s.wall_s);
  out += buf;
  for (auto& [name, f] : s.extra) {
    std::string unit = f.unit;
    std::replace(unit.begin(), unit.end(), '\n', ' ');
    std::snprintf(buf, sizeof buf, " %d %a ", f.higher_is_better ? 1 : 0, f.value);
    out += "X " + name + buf + unit + "\n";
  }
  return out;
}

bool deserialize(const std::string& text, sample& s) {
  std::istringstream in{text};
  std::string line;
  if (!std::getline(in, line) || line.rfind("OK ", 0) != 0) return false;
  s.wall_s = std::strtod(line.c_str() + 3, nullptr);
  while (std::getline(in, line)) {
    if (line.rfind("X ", 0) != 0) return false;
    std::istringstream ls{line.substr(2)};
    std::string name, value_str;
    int hib = 0;
    ls >> name >> hib >> value_str;
    std::string unit;
    std::getline(ls, unit);
    if (!unit.empty() && unit[0] == ' ') unit.erase(0, 1);
    s.extra[name] = figure{std::strtod(value_str.c_str(), nullptr), unit, hib != 0};
  }
  return true;
}

/// Runs the implementation; when counting, adds the figure "instructions":
/// those of the measured region, or of the whole call if it had none.
sample run_impl(const impl& im, const params& p) {
  if (!counting) return im.run(p);
  zero_counters();
  sample s = im.run(p);
  if (!region_dumped) {
    dump_counters();
    region_dumped = true;
  }
  s.add("instructions", read_dumped_instructions(), "instr");
  return s;
}

[[noreturn]] void child_main(int fd, const impl& im, const params& p) {
  std::string out;
  int code = 0;
  try {
    out = serialize(run_impl(im, p));
  } catch (const not_available& e) {
    out = std::string{"NA "} + e.what();
    code = 3;
  } catch (const std::exception& e) {
    out = std::string{"ERR "} + e.what();
    code = 2;
  } catch (...) {
    out = "ERR unknown exception";
    code = 2;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  write_all(fd, out);
  ::close(fd);
  ::_exit(code);
}

run_result run_in_child(const impl& im, const params& p, double timeout_s) {
  run_result res;
  std::fflush(stdout);
  std::fflush(stderr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    res.message = std::string{"pipe2 failed: "} + std::strerror(errno);
    return res;
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    res.message = std::string{"fork failed: "} + std::strerror(errno);
    return res;
  }
  if (pid == 0) {
    ::close(fds[0]);
    // Do not outlive the harness.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(4);
    child_main(fds[1], im, p);
  }
  ::close(fds[1]);
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                         std::chrono::duration<double>(timeout_s));
  char buf[4096];
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      res.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    int rc = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (rc < 0) {
      if (errno == EINTR) continue;
      res.timed_out = false;
      ::kill(pid, SIGKILL);
      res.message = std::string{"poll failed: "} + std::strerror(errno);
      break;
    }
    if (rc == 0) continue;
    auto n = ::read(fds[0], buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::kill(pid, SIGKILL);
      res.message = std::string{"read failed: "} + std::strerror(errno);
      break;
    }
    if (n == 0) break;  // EOF: the child is exiting
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  rusage ru{};
  while (::wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) {
      res.message = std::string{"wait4 failed: "} + std::strerror(errno);
      return res;
    }
  }
  res.user_s = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
  res.sys_s = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  res.peak_rss_kb = static_cast<double>(ru.ru_maxrss);  // KiB on Linux
  if (res.timed_out) {
    res.kind = outcome::failed;
    res.message = "timed out after " + fixed(timeout_s, 0) + " s (killed)";
    return res;
  }
  if (!res.message.empty()) return res;
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    res.message = "crashed: killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
    return res;
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (text.rfind("NA ", 0) == 0) {
    res.kind = outcome::skipped;
    res.message = text.substr(3);
    return res;
  }
  if (text.rfind("ERR ", 0) == 0) {
    res.message = "threw: " + text.substr(4);
    return res;
  }
  if (code != 0 || !deserialize(text, res.s)) {
    res.message = "exited with status " + std::to_string(code) + " without a valid result";
    return res;
  }
  if (!(res.s.wall_s > 0) || !std::isfinite(res.s.wall_s)) {
    res.message = "reported a non-positive wall time";
    return res;
  }
  res.kind = outcome::ok;
  return res;
}

// -- bookkeeping --------------------------------------------------------------

struct cell {
  const impl* im = nullptr;
  std::vector<run_result> ok;
  std::vector<std::string> failures;  // "run 2: ..."
  std::string skip_reason;
  bool skipped = false;
  bool stop = false;  // do not run again (skipped or timed out)
};

struct stats {
  std::vector<double> samples;
  double med = NAN, lo = NAN, hi = NAN;
};

stats make_stats(std::vector<double> xs) {
  stats st;
  st.med = median(xs);
  st.lo = min_of(xs);
  st.hi = max_of(xs);
  st.samples = std::move(xs);
  return st;
}

// -- phases -------------------------------------------------------------------
// The two cores of these machines are sometimes near each other (a cache
// line's round trip 50-110 ns) and sometimes far apart (320-360 ns), and the
// placement changes while benchmarks run. Every figure is therefore reported
// per phase: a run counts as near or far only when the probes just before and
// just after it agree; a run that straddles a change is "mixed" and kept
// apart, so that no figure mixes both.

/// "near", "far", "mixed", or "unknown" when a probe found no answer (the
/// echo thread was not scheduled in time: a loaded machine).
std::string phase_of(double before_ns, double after_ns, double far_ns) {
  if (!(before_ns > 0) || !(after_ns > 0)) return "unknown";
  const bool far_before = before_ns >= far_ns;
  const bool far_after = after_ns >= far_ns;
  if (far_before != far_after) return "mixed";
  return far_before ? "far" : "near";
}

/// A probe short enough to run between every two runs (about 1-2 ms); on a
/// loaded machine the echo thread may not run within the budget, so it tries
/// twice more with longer ones. 0: no answer.
double probe_line_ns() {
  for (int ms : {20, 200, 1000})
    if (double ns = line_round_trip_ns(4'000, std::chrono::milliseconds{ms}); ns > 0) return ns;
  return 0.0;
}

/// The cell's successful runs split by phase (near, far, mixed, unknown, and
/// "" for runs not probed (--instructions), in that order; only phases that
/// have runs); each part keeps the cell's failures and skip state.
std::vector<std::pair<std::string, cell>> by_phase(const cell& c) {
  std::vector<std::pair<std::string, cell>> parts;
  for (const char* ph : {"near", "far", "mixed", "unknown", ""}) {
    cell part;
    part.im = c.im;
    part.failures = c.failures;
    part.skip_reason = c.skip_reason;
    part.skipped = c.skipped;
    part.stop = c.stop;
    for (auto& r : c.ok)
      if (r.phase == ph) part.ok.push_back(r);
    if (!part.ok.empty()) parts.emplace_back(ph, std::move(part));
  }
  return parts;
}

/// The runs of `c` in phase `ph` (all of them when `ph` is empty and no run
/// was probed).
const cell* part_in(const std::vector<std::pair<std::string, cell>>& parts, const std::string& ph) {
  for (auto& [name, part] : parts)
    if (name == ph) return &part;
  return nullptr;
}

std::vector<double> rusage_field(const cell& c, double run_result::* field) {
  std::vector<double> xs;
  for (auto& r : c.ok) xs.push_back(r.*field);
  return xs;
}

struct json_context {
  std::string bench, mode, machine, timestamp;
  unsigned cores = 0;
  int runs_requested = 0;
  // A cache line's round trip between two threads, before and after the
  // variant's runs (ns; 0 = not measured, as under --instructions).
  double line_rtt_before_ns = 0, line_rtt_after_ns = 0;
  double far_ns = 0;  // the phase threshold (options::far_ns)
};

std::string json_common(const json_context& ctx, const variant& v, const cell& c) {
  std::string out = "{";
  out += "\"bench\": " + json_escape(ctx.bench);
  out += ", \"impl\": " + json_escape(c.im->name);
  out += ", \"variant\": " + json_escape(v.label);
  out += ", \"params\": " + json_params(v.p);
  out += ", \"mode\": " + json_escape(ctx.mode);
  return out;
}

std::string json_tail(const json_context& ctx, const cell& c) {
  std::string out;
  out += ", \"runs_requested\": " + std::to_string(ctx.runs_requested);
  out += ", \"failed_runs\": " + std::to_string(c.failures.size());
  if (!c.failures.empty()) {
    out += ", \"failures\": [";
    for (size_t i = 0; i < c.failures.size(); ++i) out += (i > 0 ? ", " : "") + json_escape(c.failures[i]);
    out += "]";
  }
  out += ", \"user_s\": " + json_number(median(rusage_field(c, &run_result::user_s)));
  out += ", \"sys_s\": " + json_number(median(rusage_field(c, &run_result::sys_s)));
  out += ", \"peak_rss_kb\": " + json_number(median(rusage_field(c, &run_result::peak_rss_kb)));
  if (ctx.line_rtt_before_ns > 0 || ctx.line_rtt_after_ns > 0)
    out +=
        ", \"line_rtt_ns\": [" + json_number(ctx.line_rtt_before_ns) + ", " + json_number(ctx.line_rtt_after_ns) + "]";
  out += ", \"cores\": " + std::to_string(ctx.cores);
  out += ", \"machine\": " + json_escape(ctx.machine);
  out += ", \"timestamp\": " + json_escape(ctx.timestamp);
  out += "}";
  return out;
}

std::string json_metric_line(const json_context& ctx, const variant& v, const cell& c, const std::string& phase,
                             const std::string& metric_name, const std::string& unit, bool higher_is_better,
                             const stats& st) {
  std::vector<double> walls;
  std::vector<double> probes;
  for (auto& r : c.ok) {
    walls.push_back(r.s.wall_s);
    probes.push_back(r.rtt_before_ns);
    probes.push_back(r.rtt_after_ns);
  }
  std::string out = json_common(ctx, v, c);
  out += ", \"status\": \"ok\"";
  if (!phase.empty()) {
    // Which phase these runs were in, and the probes around them (ns).
    out += ", \"phase\": " + json_escape(phase);
    out += ", \"line_rtt_range_ns\": [" + json_number(min_of(probes)) + ", " + json_number(max_of(probes)) + "]";
    out += ", \"far_ns\": " + json_number(ctx.far_ns);
  }
  out += ", \"metric\": " + json_escape(metric_name);
  out += ", \"value\": " + json_number(st.med);
  out += ", \"unit\": " + json_escape(unit);
  out += std::string{", \"higher_is_better\": "} + (higher_is_better ? "true" : "false");
  out += ", \"runs\": " + std::to_string(st.samples.size());
  out += ", \"median\": " + json_number(st.med);
  out += ", \"min\": " + json_number(st.lo);
  out += ", \"max\": " + json_number(st.hi);
  out += ", \"samples\": " + json_numbers(st.samples);
  out += ", \"wall_s\": " + json_number(median(walls));
  out += json_tail(ctx, c);
  return out;
}

std::string json_status_line(const json_context& ctx, const variant& v, const cell& c, const metric& m) {
  std::string out = json_common(ctx, v, c);
  out += std::string{", \"status\": "} + (c.skipped ? "\"skipped\"" : "\"failed\"");
  if (c.skipped) out += ", \"reason\": " + json_escape(c.skip_reason);
  out += ", \"metric\": " + json_escape(m.name);
  out += ", \"value\": null";
  out += ", \"unit\": " + json_escape(m.unit);
  out += std::string{", \"higher_is_better\": "} + (m.higher_is_better ? "true" : "false");
  out += ", \"runs\": 0";
  out += json_tail(ctx, c);
  return out;
}

// -- the human table ----------------------------------------------------------

struct table {
  std::vector<std::vector<std::string>> rows;
  void add(std::vector<std::string> row) { rows.push_back(std::move(row)); }
  void print() const {
    std::vector<size_t> width;
    for (auto& r : rows)
      for (size_t i = 0; i < r.size(); ++i) {
        if (width.size() <= i) width.push_back(0);
        // The last column (notes) is not padded.
        width[i] = std::max(width[i], r[i].size());
      }
    for (auto& r : rows) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        std::string cellv = r[i];
        if (i + 1 < r.size()) cellv.resize(width[i], ' ');
        line += (i > 0 ? "  " : "") + cellv;
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      std::printf("%s\n", line.c_str());
    }
  }
};

}  // namespace

// -- --instructions -----------------------------------------------------------

metric instruction_metric(const instruction_counting& ic) {
  return metric{"instructions_per_" + ic.item, "instr/" + ic.item, false,
                [ic](const sample& s, const params& p) -> double {
                  auto it = s.extra.find("instructions");
                  if (it == s.extra.end()) return NAN;
                  if (ic.count_figure.empty()) return it->second.value / ic.count(p);
                  auto n = s.extra.find(ic.count_figure);
                  return n == s.extra.end() ? NAN : it->second.value / n->second.value;
                }};
}

void remove_dir(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") ::unlink((dir + "/" + name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

/// Runs this program again, with the same arguments, under callgrind, with
/// its files in a fresh directory that is removed afterwards.
int run_under_callgrind(int argc, char** argv, const spec& s) {
  char dir[] = "/tmp/troupe-bench-callgrind.XXXXXX";
  if (::mkdtemp(dir) == nullptr) {
    std::fprintf(stderr, "%s: --instructions: cannot create a directory in /tmp: %s\n", s.name.c_str(),
                 std::strerror(errno));
    return 2;
  }
  std::vector<std::string> args{"valgrind", "--tool=callgrind", "-q",
                                std::string{"--callgrind-out-file="} + dir + "/cg.%p"};
  for (int i = 0; i < argc; ++i) args.emplace_back(argv[i]);
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv(callgrind_dir_env, dir, 1);
    ::execvp(cargs[0], cargs.data());
    std::fprintf(stderr, "%s: --instructions: cannot run valgrind (scripts/setup installs it): %s\n", s.name.c_str(),
                 std::strerror(errno));
    ::_exit(127);
  }
  int status = 0;
  int rc = 2;
  if (pid < 0) {
    std::fprintf(stderr, "%s: fork failed: %s\n", s.name.c_str(), std::strerror(errno));
  } else {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  }
  remove_dir(dir);
  return rc;
}

// -- run_main -----------------------------------------------------------------

int run_main(int argc, char** argv, const spec& s) {
  options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto need_value = [&](const char* what) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: %s needs a value\n", s.name.c_str(), what);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--runs") {
      opt.runs = std::atoi(need_value("--runs").c_str());
      if (opt.runs < 1) {
        std::fprintf(stderr, "%s: --runs must be >= 1\n", s.name.c_str());
        return 2;
      }
    } else if (a == "--full") {
      opt.full = true;
    } else if (a == "--instructions") {
      opt.instructions = true;
    } else if (a == "--quick") {
      opt.full = false;
    } else if (a == "--impl") {
      opt.impls = split_commas(need_value("--impl"));
    } else if (a == "--variant") {
      opt.variants = split_commas(need_value("--variant"));
    } else if (a == "--json") {
      opt.json_path = need_value("--json");
    } else if (a == "--quiet" || a == "-q") {
      opt.quiet = true;
    } else if (a == "--timeout") {
      opt.timeout_s = std::atof(need_value("--timeout").c_str());
      if (!(opt.timeout_s > 0)) {
        std::fprintf(stderr, "%s: --timeout must be > 0\n", s.name.c_str());
        return 2;
      }
    } else if (a == "--far-ns") {
      opt.far_ns = std::strtod(need_value("--far-ns").c_str(), nullptr);
      if (!(opt.far_ns > 0)) {
        std::fprintf(stderr, "%s: --far-ns must be > 0 (a cache line round trip in ns)\n", s.name.c_str());
        return 2;
      }
    } else if (a == "--help" || a == "-h") {
      print_usage(s, argv[0]);
      return 0;
    } else {
      std::fprintf(stderr, "%s: unknown argument '%s' (try --help)\n", s.name.c_str(), a.c_str());
      return 2;
    }
  }
  // Select implementations (in spec order).
  std::vector<const impl*> selected;
  for (auto& name : opt.impls) {
    bool found = false;
    for (auto& im : s.impls) found = found || im.name == name;
    if (!found) {
      std::fprintf(stderr, "%s: unknown implementation '%s'; available:", s.name.c_str(), name.c_str());
      for (auto& im : s.impls) std::fprintf(stderr, " %s", im.name.c_str());
      std::fprintf(stderr, "\n");
      return 2;
    }
  }
  auto uncounted = [&](const impl& im) {
    return opt.instructions && s.instructions &&
           std::find(s.instructions->uncounted.begin(), s.instructions->uncounted.end(), im.name) !=
               s.instructions->uncounted.end();
  };
  for (auto& im : s.impls)
    if (opt.impls.empty() ? !uncounted(im) : std::find(opt.impls.begin(), opt.impls.end(), im.name) != opt.impls.end())
      selected.push_back(&im);
  if (opt.instructions) {
    if (!s.instructions) {
      std::fprintf(stderr, "%s: --instructions: this benchmark defines no instruction variants\n", s.name.c_str());
      return 2;
    }
    if (!on_valgrind()) return run_under_callgrind(argc, argv, s);
    if (std::getenv(callgrind_dir_env) == nullptr) {
      std::fprintf(stderr,
                   "%s: --instructions under valgrind needs %s (run it without valgrind: it starts callgrind)\n",
                   s.name.c_str(), callgrind_dir_env);
      return 2;
    }
    counting = true;
  }
  // The figure: instructions per item under --instructions (deterministic,
  // so one run is the default), else the benchmark's own.
  const metric primary = opt.instructions ? instruction_metric(*s.instructions) : s.primary;
  int runs = opt.runs > 0 ? opt.runs : (opt.instructions ? 1 : opt.full ? s.full_runs : s.default_runs);
  double timeout_s = opt.timeout_s > 0 ? opt.timeout_s : opt.instructions ? 50 * s.timeout_s : s.timeout_s;
  auto variants = opt.instructions ? s.instructions->variants() : s.variants(opt.full);
  if (!opt.variants.empty()) {
    // --variant NAME: the variant labelled NAME (split_commas drops spaces,
    // so they are not compared), or those whose label's first word is NAME.
    // (A label with commas, "no work, 2 farms of 4", is named by its first
    // word without the comma: "no".)
    auto named = [](const variant& v, const std::string& name) {
      std::string squeezed = v.label;
      squeezed.erase(std::remove(squeezed.begin(), squeezed.end(), ' '), squeezed.end());
      std::string first = v.label.substr(0, v.label.find_first_of(" ,"));
      return squeezed == name || first == name;
    };
    for (auto& name : opt.variants)
      if (std::none_of(variants.begin(), variants.end(), [&](const variant& v) { return named(v, name); })) {
        std::fprintf(stderr, "%s: no variant '%s'; available:", s.name.c_str(), name.c_str());
        for (auto& v : variants) std::fprintf(stderr, " '%s'", v.label.c_str());
        std::fprintf(stderr, "\n");
        return 2;
      }
    std::vector<variant> picked;
    for (auto& v : variants)
      if (std::any_of(opt.variants.begin(), opt.variants.end(),
                      [&](const std::string& name) { return named(v, name); }))
        picked.push_back(v);
    variants = std::move(picked);
  }

  json_context ctx;
  ctx.bench = s.name;
  ctx.mode = opt.instructions ? "instructions" : opt.full ? "full" : "quick";
  ctx.machine = machine_description();
  ctx.cores = std::thread::hardware_concurrency();
  ctx.runs_requested = runs;
  ctx.far_ns = opt.far_ns;

  std::FILE* json = nullptr;
  if (!opt.json_path.empty()) {
    json = std::fopen(opt.json_path.c_str(), "a");
    if (json == nullptr) {
      std::fprintf(stderr, "%s: cannot open %s for appending: %s\n", s.name.c_str(), opt.json_path.c_str(),
                   std::strerror(errno));
      return 2;
    }
  }

  if (!opt.quiet)
    std::fprintf(stderr, "[%s] %s mode, %d run(s) per impl and variant, %u cores\n", s.name.c_str(), ctx.mode.c_str(),
                 runs, ctx.cores);

  // The figure of a variant: its own (variant::figure) or the spec's.
  auto figure_of = [&](const variant& v) -> const metric& {
    return !opt.instructions && v.figure ? *v.figure : primary;
  };
  std::vector<std::vector<cell>> cells(variants.size());
  std::vector<std::string> failure_log;
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    auto& v = variants[vi];
    const metric& fig_metric = figure_of(v);
    auto& row = cells[vi];
    for (auto* im : selected) {
      row.emplace_back();
      row.back().im = im;
    }
    // Which phase the machine is in (line_probe.hpp), probed before the
    // first run and after each; not under valgrind, which runs one thread
    // at a time.
    double probe = opt.instructions ? 0.0 : probe_line_ns();
    ctx.line_rtt_before_ns = probe;
    for (int r = 1; r <= runs; ++r) {
      for (auto& c : row) {
        if (c.stop) continue;
        auto res = run_in_child(*c.im, v.p, timeout_s);
        res.rtt_before_ns = probe;
        if (!opt.instructions) probe = probe_line_ns();
        res.rtt_after_ns = probe;
        if (!opt.instructions) res.phase = phase_of(res.rtt_before_ns, res.rtt_after_ns, opt.far_ns);
        std::string where =
            s.name + " [" + v.label + "] impl " + c.im->name + " run " + std::to_string(r) + "/" + std::to_string(runs);
        switch (res.kind) {
          case outcome::ok: {
            if (!opt.quiet) {
              double fig = fig_metric.compute(res.s, v.p);
              std::string line = res.phase.empty() ? std::string{}
                                                   : ", line " + fixed(res.rtt_before_ns, 0) + "/" +
                                                         fixed(res.rtt_after_ns, 0) + " ns: " + res.phase;
              std::fprintf(stderr,
                           "[%s | %s] run %d/%d %-8s %s %s  (wall %.3f s, "
                           "user %.2f s, sys %.2f s, rss %.1f MiB%s)\n",
                           s.name.c_str(), v.label.c_str(), r, runs, c.im->name.c_str(), human(fig).c_str(),
                           fig_metric.unit.c_str(), res.s.wall_s, res.user_s, res.sys_s, res.peak_rss_kb / 1024.0,
                           line.c_str());
            }
            c.ok.push_back(std::move(res));
            break;
          }
          case outcome::skipped:
            c.skipped = c.ok.empty() && c.failures.empty();
            c.skip_reason = res.message;
            c.stop = true;
            if (!opt.quiet)
              std::fprintf(stderr, "[%s | %s] %s skipped: %s\n", s.name.c_str(), v.label.c_str(), c.im->name.c_str(),
                           res.message.c_str());
            break;
          case outcome::failed:
            std::fprintf(stderr, "*** FAILED: %s: %s\n", where.c_str(), res.message.c_str());
            c.failures.push_back("run " + std::to_string(r) + ": " + res.message);
            failure_log.push_back(where + ": " + res.message);
            if (res.timed_out) c.stop = true;  // another 'timeout' seconds would not help
            break;
        }
      }
    }
    if (!opt.instructions) {
      ctx.line_rtt_after_ns = probe;
      if (!opt.quiet)
        std::fprintf(stderr, "[%s | %s] cache line round trip %.0f ns before the runs, %.0f ns after\n", s.name.c_str(),
                     v.label.c_str(), ctx.line_rtt_before_ns, ctx.line_rtt_after_ns);
    }
    // JSON lines for this variant.
    if (json != nullptr) {
      ctx.timestamp = utc_timestamp();
      for (auto& c : row) {
        if (c.ok.empty()) {
          std::fprintf(json, "%s\n", json_status_line(ctx, v, c, fig_metric).c_str());
          continue;
        }
        // One set of lines per phase: a figure never mixes near and far runs.
        for (auto& [ph, part] : by_phase(c)) {
          std::vector<double> xs;
          xs.reserve(part.ok.size());
          for (auto& r : part.ok) xs.push_back(fig_metric.compute(r.s, v.p));
          std::fprintf(json, "%s\n",
                       json_metric_line(ctx, v, part, ph, fig_metric.name, fig_metric.unit, fig_metric.higher_is_better,
                                        make_stats(xs))
                           .c_str());
          // Extra figures, in name order (under --instructions only the total).
          std::map<std::string, figure> kinds;
          for (auto& r : part.ok)
            for (auto& [name, f] : r.s.extra)
              if (!opt.instructions || name == "instructions") kinds.emplace(name, f);
          for (auto& [name, f] : kinds) {
            std::vector<double> ys;
            for (auto& r : part.ok) {
              auto it = r.s.extra.find(name);
              if (it != r.s.extra.end()) ys.push_back(it->second.value);
            }
            std::fprintf(json, "%s\n",
                         json_metric_line(ctx, v, part, ph, name, f.unit, f.higher_is_better, make_stats(ys)).c_str());
          }
        }
      }
      std::fflush(json);
    }
  }
  if (json != nullptr) std::fclose(json);

  // Human table.
  std::printf("\n== %s: %s (%s mode, %d run(s), %u cores) ==\n", s.name.c_str(), s.description.c_str(),
              ctx.mode.c_str(), runs, ctx.cores);
  table t;
  t.add({"variant", "phase", "impl", primary.name + " [" + primary.unit + "]", "min", "max", "vs troupe", "user s",
         "sys s", "peak RSS MiB", "ok", "note"});
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    auto& v = variants[vi];
    const metric& fig_metric = figure_of(v);
    // A variant with a figure of its own names it in the note column.
    const std::string figure_note =
        &fig_metric == &primary ? std::string{} : "figure: " + fig_metric.name + " [" + fig_metric.unit + "]";
    std::vector<std::vector<std::pair<std::string, cell>>> parts;
    std::vector<std::string> phases;  // those with runs, in by_phase's order
    for (auto& c : cells[vi]) {
      parts.push_back(by_phase(c));
      for (auto& [ph, part] : parts.back())
        if (std::find(phases.begin(), phases.end(), ph) == phases.end()) phases.push_back(ph);
    }
    std::sort(phases.begin(), phases.end(), [](const std::string& a, const std::string& b) {
      auto rank = [](const std::string& p) {
        return p == "near" ? 0 : p == "far" ? 1 : p == "mixed" ? 2 : p == "unknown" ? 3 : 4;
      };
      return rank(a) < rank(b);
    });
    if (phases.empty()) phases.emplace_back();  // every run failed or skipped: one row per impl
    for (auto& ph : phases) {
      // troupe's median in this phase, for the ratio column
      double troupe_med = NAN;
      for (size_t ci = 0; ci < cells[vi].size(); ++ci)
        if (const cell* part = part_in(parts[ci], ph); part != nullptr && part->im->name == "troupe") {
          std::vector<double> xs;
          xs.reserve(part->ok.size());
          for (auto& r : part->ok) xs.push_back(fig_metric.compute(r.s, v.p));
          troupe_med = median(xs);
        }
      const std::string ph_label = ph.empty() ? "-" : ph;
      for (size_t ci = 0; ci < cells[vi].size(); ++ci) {
        auto& c = cells[vi][ci];
        std::string note = figure_note;
        if (c.skipped) note = "skipped: " + c.skip_reason;
        else if (!c.failures.empty())
          note = "FAILED " + std::to_string(c.failures.size()) + " run(s)" +
                 (c.stop ? " (timed out; later runs not attempted)" : "");
        const cell* part = part_in(parts[ci], ph);
        if (part == nullptr) {
          if (c.ok.empty() && &ph == &phases.front())
            t.add(
                {v.label, ph_label, c.im->name, "-", "-", "-", "-", "-", "-", "-", "0/" + std::to_string(runs), note});
          continue;
        }
        std::vector<double> xs;
        xs.reserve(part->ok.size());
        for (auto& r : part->ok) xs.push_back(fig_metric.compute(r.s, v.p));
        auto st = make_stats(xs);
        std::string ratio = "-";
        if (std::isfinite(troupe_med) && c.im->name != "troupe" && st.med > 0 && troupe_med > 0) {
          double q = fig_metric.higher_is_better ? troupe_med / st.med : st.med / troupe_med;
          ratio = fixed(q, 2) + "x";
        }
        t.add({v.label, ph_label, c.im->name, human(st.med), human(st.lo), human(st.hi), ratio,
               fixed(median(rusage_field(*part, &run_result::user_s)), 2),
               fixed(median(rusage_field(*part, &run_result::sys_s)), 2),
               fixed(median(rusage_field(*part, &run_result::peak_rss_kb)) / 1024.0, 1),
               std::to_string(part->ok.size()) + "/" + std::to_string(runs), note});
      }
    }
  }
  t.print();
  if (!failure_log.empty()) {
    std::printf("\n%zu FAILED run(s):\n", failure_log.size());
    for (auto& f : failure_log) std::printf("  %s\n", f.c_str());
    std::fflush(stdout);
    return 1;
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace bench
