// troupe benchmark harness (independent of the troupe library).
//
// A benchmark executable describes itself with a bench::spec (name, parameter
// variants, implementations, figure) and hands control to bench::run_main.
// Every run of every implementation executes in a forked child process: the
// child runs the implementation, sends its bench::sample back through a pipe
// and _exits; the parent collects the child's rusage (user/sys CPU, peak RSS)
// with wait4. Runs are interleaved: run 1 of every implementation, then run 2,
// and so on, separately for each parameter variant.
//
// Implementations measure their own wall time (bench::stopwatch around the
// measured region) and check their own result; a wrong result is reported by
// throwing std::runtime_error (see bench::check). An implementation that does
// not exist yet throws bench::not_available and is reported as skipped.
//
// This header deliberately sticks to C++17 so it can be included from
// translation units that are compiled against older libraries.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace bench {

/// Thrown by an implementation that cannot run in this build (e.g. the troupe
/// runtime is not there yet). Reported as "skipped", not as a failure.
struct not_available : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// An additional named figure reported by an implementation (e.g. latency).
struct figure {
  double value = 0;
  std::string unit;
  bool higher_is_better = false;
};

/// What one run of one implementation measured.
struct sample {
  /// Wall-clock seconds of the measured region (steady_clock).
  double wall_s = 0;
  /// Optional extra figures; each becomes its own metric in the JSON output.
  /// Names must not contain whitespace.
  std::map<std::string, figure> extra;

  void add(const std::string& name, double value, const std::string& unit, bool higher_is_better = false) {
    extra[name] = figure{value, unit, higher_is_better};
  }
};

/// Adds p50_us and p99_us (nearest rank) of latencies in nanoseconds to `s`;
/// reorders `ns` (the round-trip benchmarks: remote_ping_pong,
/// kernel_round_trip).
inline void add_latency_percentiles(sample& s, std::vector<std::int64_t>& ns) {
  if (ns.empty()) return;
  auto percentile_us = [&ns](double q) {
    auto rank = static_cast<std::size_t>(q * static_cast<double>(ns.size()) + 0.999999);
    auto k = std::min(ns.size() - 1, rank > 0 ? rank - 1 : 0);
    std::nth_element(ns.begin(), ns.begin() + static_cast<std::ptrdiff_t>(k), ns.end());
    return static_cast<double>(ns[k]) / 1e3;
  };
  s.add("p50_us", percentile_us(0.50), "us");
  s.add("p99_us", percentile_us(0.99), "us");
}

/// Integer-valued benchmark parameters, in insertion order (ends up verbatim
/// in the JSON "params" object).
class params {
 public:
  params() = default;
  params(std::initializer_list<std::pair<std::string, std::int64_t>> kv) {
    for (auto& [k, v] : kv) set(k, v);
  }

  params& set(const std::string& key, std::int64_t value);

  /// The value for `key`; throws std::logic_error if it is missing.
  std::int64_t get(const std::string& key) const;

  /// The value for `key` or `fallback`.
  std::int64_t get_or(const std::string& key, std::int64_t fallback) const;

  bool has(const std::string& key) const;

  const std::vector<std::pair<std::string, std::int64_t>>& items() const { return kv_; }

 private:
  std::vector<std::pair<std::string, std::int64_t>> kv_;
};

namespace detail {
/// Under --instructions, the measured region's bounds: the stopwatch's start
/// zeroes callgrind's counters, the first seconds() after it dumps them (every
/// thread of the process). Outside --instructions they only test a flag.
void region_begin();
void region_end();
}  // namespace detail

/// Measures the wall-clock time of the region an implementation times (and,
/// under --instructions, the instructions executed in it by every thread).
class stopwatch {
 public:
  stopwatch() : t0_(std::chrono::steady_clock::now()) { detail::region_begin(); }
  void restart() {
    detail::region_begin();
    t0_ = std::chrono::steady_clock::now();
  }
  double seconds() const {
    auto t = std::chrono::steady_clock::now();
    detail::region_end();
    return std::chrono::duration<double>(t - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

/// Throws std::runtime_error(what) unless `ok`.
inline void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

/// Throws std::runtime_error with "<what>: expected <expected>, got <got>"
/// unless expected == got.
void check_eq(const std::string& what, std::int64_t expected, std::int64_t got);

using impl_fn = std::function<sample(const params&)>;

struct impl {
  std::string name;  // "troupe", "caf", "threads"
  impl_fn run;
};

/// How the primary figure is derived from a sample.
struct metric {
  std::string name;  // e.g. "msgs_per_s", "wall_s", "ns_per_msg"
  std::string unit;  // e.g. "msg/s", "s", "ns/msg"
  bool higher_is_better = true;
  std::function<double(const sample&, const params&)> compute;
};

/// A primary figure that is one of the sample's extra figures (`key`; 0
/// when the sample lacks it).
inline metric extra_metric(std::string name, std::string unit, bool higher_is_better, std::string key) {
  return metric{std::move(name), std::move(unit), higher_is_better,
                [key = std::move(key)](const sample& r, const params&) {
                  auto it = r.extra.find(key);
                  return it == r.extra.end() ? 0.0 : it->second.value;
                }};
}

/// One parameter set; `label` is a short human name ("1 worker").
struct variant {
  std::string label;
  params p;
  /// This variant's own figure, when it measures something else than the
  /// spec's primary one (detection: a count of false alarms next to
  /// detection times); ignored under --instructions.
  std::optional<metric> figure = {};
};

/// What --instructions counts: small parameter sets (one worker, so that the
/// count does not depend on how valgrind interleaves threads) and the unit.
struct instruction_counting {
  std::function<std::vector<variant>()> variants;
  std::string item;  // e.g. "msg": the figure is "instructions_per_msg"
  std::function<double(const params&)> count;
  /// When set, the item count is this extra figure of the sample instead
  /// (e.g. the tuples a time- or pass-bound run delivered).
  std::string count_figure = {};
  /// Implementations left out unless named with --impl: a thread that polls
  /// without ever yielding runs for whole time slices under valgrind, which
  /// runs one thread at a time (minutes for one count, and not the same twice).
  std::vector<std::string> uncounted = {};
};

struct spec {
  std::string name;         // "ping_pong" -> JSON field "bench"
  std::string description;  // one line for the human table
  std::vector<impl> impls;
  metric primary;
  /// Parameter variants for quick (full == false) and --full mode.
  std::function<std::vector<variant>(bool full)> variants;
  int default_runs = 5;
  int full_runs = 5;
  double timeout_s = 120;  // per child process; --timeout overrides
  /// Set by benchmarks that support --instructions.
  std::optional<instruction_counting> instructions;
};

/// Parses the command line (--runs N, --full, --instructions, --impl a,b,
/// --variant a,b, --json PATH, --quiet, --timeout S, --help), runs everything
/// and prints the table.
///
/// --instructions runs the harness again under `valgrind --tool=callgrind`
/// with the spec's instruction variants; each child counts the instructions
/// of its measured region (see stopwatch; the whole implementation call when
/// it never starts a stopwatch) and the figure is instructions per item.
/// Returns the process exit status: 0 when every run succeeded or was
/// skipped as not available, 1 on any failure, 2 on bad usage.
int run_main(int argc, char** argv, const spec& s);

// Ready-made figures.
metric wall_time_metric();
/// count(p) items per wall second; `name` e.g. "msgs_per_s", unit "msg/s".
metric rate_metric(std::string name, std::string unit, std::function<double(const params&)> count);
/// wall nanoseconds per item.
metric ns_per_item_metric(std::string name, std::string unit, std::function<double(const params&)> count);

}  // namespace bench
