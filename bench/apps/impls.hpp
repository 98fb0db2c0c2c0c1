// apps: the streaming applications of apps/ on troupe and as CAF 0.17 actors,
// measured three ways (the AGERE paper's Figs. 12-17). Three executables share
// the implementations (troupe.cpp, caf.cpp) and this header:
//   bench_apps_max_rate    (max_rate.cpp)   one replica per operator, every
//                          source at full speed, held back only by
//                          backpressure (Fig. 16)
//   bench_apps_rate_sweep  (rate_sweep.cpp) one replica per operator, the
//                          source paced at a range of offered rates, plus full
//                          speed: sink throughput against offered rate (Figs. 12-15)
//   bench_apps_replicated  (replicated.cpp) every operator replicated, every
//                          source at full speed (Fig. 17)
// Each source replica replays the whole in-memory input cyclically for
// `seconds`; then end-of-stream flows down the graph and the run ends when
// every sink replica has drained.
//
// The applications (the `app` param; graph, routing into each operator):
//   0 wc  Word Count: source -> splitter (round robin) -> counter (by word)
//         -> sink (round robin); input apps/data/book.dat, one tuple a line
//   1 fd  Fraud Detection: source -> predictor (by customer) -> sink (round
//         robin); 800,000 generated transactions and apps/data/fd_model.txt
//   2 sd  Spike Detection: source -> moving_average (by device; mean of the
//         device's last 1000 temperatures, slide 1) -> detector (round robin;
//         forwards |value - mean| > 0.025 * mean) -> sink (round robin);
//         1,000,000 generated readings
//   3 lr  Linear Road, tolls (apps/lr/lr.hpp): source -> dispatcher (by
//         vehicle; keeps and parses the position reports) -> a copy of each
//         report to each of three branches:
//           toll_notification_pos (by vehicle);
//           average_speed (by vehicle) -> last_average_speed (by segment)
//             -> toll_notification_las (round robin);
//           count_vehicles (by segment) -> toll_notification_cv (round robin)
//         -> sink (one replica, whatever `replicas`: toll_logic joins the
//         three branches and assesses the tolls). Input: lr::generate(180
//         minutes, 1 expressway, the default seed), 1,358,454 lines, each
//         checked with lr::check and loaded as lr::run loads it. Before each
//         line the source shifts Time by whole passes over the input, and
//         after the last line of each minute it sends an end-of-minute marker
//         to every dispatcher replica (one source tuple, as troupe's
//         send_all counts it); an operator closes a minute when the markers
//         of all its upstream replicas are in, then sends a marker on to
//         every replica downstream, of every branch. The sink counts every
//         tuple it gets, markers included. With replicas > 1 each source
//         replica replays the whole input, so each vehicle drives several
//         times at once.
//
// params (every variant of every executable sets all of them):
//   app       see above
//   rate      tuples/s per source replica; 0 = full speed
//   replicas  replicas of every operator, source and sink included (lr:
//             but its sink)
//   seconds   how long the sources emit
//   passes    (optional, not in any variant) instead of `seconds`: each
//             source replica replays the input this many times, then ends
//             its stream; the outcome then also holds what the application
//             computed (outcome::results), so that tests can compare both
//             implementations (tests/caf_apps_test.cpp)
//   workers   scheduler threads
// variants:
//   max_rate    one per app: rate 0, replicas 1, workers 2, seconds quick 5 / full 10
//   rate_sweep  per app, one per offered rate of app_table (quick_rates or
//               full_rates, chosen to bracket both implementations' maximum
//               measured on the 2-core machine) and one at full speed
//               ("<app> full"); replicas 1, workers 2, seconds quick 3 / full 10
//   replicated  per app: "<app> x2": replicas 2, workers 2; and, where it
//               differs from that one, "<app> xR/C": C = the machine's cores
//               (std::thread::hardware_concurrency) as workers and
//               R = max(2, C / operators) replicas of each operator, which
//               fills the cores as the paper did (its 48 cores: wc x12, fd
//               x16, sd x12); rate 0; seconds quick 5 / full 10
// impls:
//   troupe   troupe_apps::<app>::run (the applications themselves:
//            troupe's typed streaming layer, channels of 1024 slots, every node
//            on the actor system's pool, a farm per operator with the routing
//            above; cli::rate paces each source replica, cli::parallelism
//            gives every operator `replicas`; every sink tuple's latency is
//            measured)
//   caf      CAF 0.17 event-based actors, one per replica of each operator,
//            the same operator code (caf.cpp; lr: lr.hpp's logic classes and
//            marker counting). Each upstream actor routes straight into the
//            downstream replicas with the troupe graph's policy (by key:
//            std::hash of the key modulo the replicas, as troupe::by_key;
//            otherwise round robin), no router actor; markers go to every
//            replica downstream. A
//            source sends slices of at most 100 tuples per activation and
//            re-triggers itself with a message; before each tuple it reads the
//            mailbox length of the first-operator replica that tuple goes to
//            (lr: markers are counted in it but not held back) and, at 1024
//            or more, ends the activation and retries through
//            CAF's timer (the AGERE paper's send_next_if experiment; its
//            worker is free meanwhile). The length is a counter kept next to
//            each first-operator replica's mailbox (see caf.cpp for why not
//            CAF's own mailbox().size()). The other actors' mailboxes are
//            unbounded as in plain CAF. A paced source sends the tuples that
//            are due and, once caught up, sleeps through CAF's timer
//            (delayed_send) until the next one is due, 50 us at least (so it
//            sends bursts of up to 50 us worth of tuples; troupe's paced
//            source does the same through pause_until, which also sleeps
//            50 us at least).
// Measured region: from the start of the graph until every sink replica has
// drained (troupe: run_result::elapsed_s; caf: the same span by
// bench::stopwatch). Loading and parsing the input is not in it.
// Figure: sink_tuples_per_s (an extra figure, also the primary metric
// tuples_per_s).
// Extras: source_tuples_per_s, sink_tuples_per_s, offered_tuples_per_s (rate
// x replicas; paced sources only), latency_p50_us, latency_p95_us (source stamp
// to sink, every sink tuple), sink_tuples, drain_s (elapsed_s - seconds: how
// long the graph ran on after the sources stopped, i.e. how far behind the
// sinks were).
// Peak RSS comes from the harness. Plot: scripts/plot_bench.py draws
// apps_rate_sweep as sink tuples/s (and latency) against offered rate.
// Check: the sinks got tuples; wc: the sinks' count equals the number of
// words the splitters produced (troupe: the sum of the counters' final
// counts); fd, sd: the sinks' count is at most the sources'; lr: the sink
// assessed tolls, at most one per tuple it got (each toll is a crossing
// notification's), and charged (toll > 0) at most as many. Run over whole
// passes instead of `seconds`, both implementations assess and charge the
// same tolls as troupe-lr --passes N (tests/caf_apps_test.cpp compares every
// result of both implementations over whole passes).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/harness.hpp"
#include "lr/lr.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_caf(const params& p);

namespace apps {

enum class app : std::int64_t {
  wc = 0,
  fd = 1,
  sd = 2,
  lr = 3,
};

/// What the benchmarks need to know of an application.
struct app_info {
  app id;
  const char* name;
  std::size_t operators;  // in the graph, source and sink included (troupe_apps::<app>::operators)
  std::vector<std::int64_t> quick_rates, full_rates;  // rate_sweep: offered source tuples/s
};

inline const std::vector<app_info>& app_table() {
  // Maxima measured with bench_apps_max_rate on the 2-core machine (source
  // tuples/s, one replica per operator): wc troupe ~330-440k lines/s, caf
  // ~20-40k; fd troupe ~3M, caf ~2M; sd troupe ~29M, caf ~2.8M; lr troupe
  // ~7M (sink ~3.3M), caf ~0.75-1M (sink ~0.35-0.47M).
  static const std::vector<app_info> table{
      {app::wc,
       "wc",
       4,
       {10'000, 30'000, 100'000, 300'000, 1'000'000},
       {5'000, 10'000, 20'000, 50'000, 100'000, 200'000, 500'000, 1'000'000}},
      {app::fd,
       "fd",
       3,
       {100'000, 300'000, 1'000'000, 2'000'000, 5'000'000},
       {100'000, 200'000, 500'000, 1'000'000, 2'000'000, 5'000'000, 10'000'000}},
      {app::sd,
       "sd",
       4,
       {300'000, 1'000'000, 3'000'000, 10'000'000, 30'000'000},
       {200'000, 500'000, 1'000'000, 2'000'000, 5'000'000, 10'000'000, 20'000'000, 50'000'000}},
      {app::lr,
       "lr",
       9,
       {100'000, 300'000, 1'000'000, 3'000'000, 10'000'000},
       {100'000, 200'000, 500'000, 1'000'000, 2'000'000, 5'000'000, 10'000'000}},
  };
  return table;
}

inline const app_info& info(std::int64_t a) {
  for (auto& i : app_table())
    if (static_cast<std::int64_t>(i.id) == a) return i;
  throw std::runtime_error("apps: unknown app " + std::to_string(a));
}

inline std::string wc_input() { return TROUPE_APPS_DATA "/book.dat"; }
inline std::string fd_model() { return TROUPE_APPS_DATA "/fd_model.txt"; }
inline constexpr std::size_t fd_transactions = 800'000;
inline constexpr std::size_t sd_readings = 1'000'000;
inline constexpr std::size_t sd_window = 1000;
inline constexpr double sd_threshold = 0.025;
inline constexpr int lr_minutes = 180;
inline constexpr int lr_xways = 1;

/// What an application computed in a run over whole passes, kept the same
/// way by both implementations (each part only for its application).
struct results {
  std::map<std::string, std::uint64_t> word_counts;  // wc: every word's final count
  std::set<std::string> outliers;                    // fd: transaction ids
  std::set<std::pair<int, std::uint64_t>> spikes;    // sd: (device, epoch)
  std::vector<troupe_apps::lr::toll> tolls;          // lr: every toll assessed, sorted
  bool operator==(const results&) const = default;
};

/// What both implementations measured; reported and checked the same way.
struct outcome {
  app id;
  double seconds;  // how long the sources were asked to emit
  double rate;     // per source replica; 0 = full speed
  std::size_t replicas;
  std::size_t workers;
  std::uint64_t passes;  // 0: the sources run for `seconds`
  double elapsed_s = 0;
  std::uint64_t source_tuples = 0;
  std::uint64_t sink_tuples = 0;
  std::uint64_t words = 0;                              // wc: words the splitters produced
  std::uint64_t tolls_assessed = 0, tolls_charged = 0;  // lr: by the sink, and those above 0
  double p50_us = 0, p95_us = 0;
  results computed;  // filled in runs over whole passes only

  explicit outcome(const params& p)
      : id{info(p.get("app")).id},
        seconds{static_cast<double>(p.get("seconds"))},
        rate{static_cast<double>(p.get("rate"))},
        replicas{static_cast<std::size_t>(std::max<std::int64_t>(1, p.get("replicas")))},
        workers{static_cast<std::size_t>(p.get("workers"))},
        passes{static_cast<std::uint64_t>(std::max<std::int64_t>(0, p.get_or("passes", 0)))} {}

  void check() const {
    bench::check(sink_tuples > 0, "the sink got no tuple");
    bench::check(source_tuples > 0, "the source sent nothing");
    if (id == app::wc) {
      check_eq("wc: tuples at the sink (words the splitter produced)", static_cast<std::int64_t>(words),
               static_cast<std::int64_t>(sink_tuples));
    } else if (id == app::lr) {
      // Every toll is assessed for a crossing notification the sink got.
      bench::check(tolls_assessed > 0, "lr: no toll assessed");
      bench::check(tolls_assessed <= sink_tuples && tolls_charged <= tolls_assessed,
                   "lr: " + std::to_string(tolls_assessed) + " tolls assessed (" + std::to_string(tolls_charged) +
                       " charged) from " + std::to_string(sink_tuples) + " tuples at the sink");
    } else {
      bench::check(sink_tuples <= source_tuples, std::string{info(static_cast<std::int64_t>(id)).name} +
                                                     ": more tuples at the sink (" + std::to_string(sink_tuples) +
                                                     ") than the source sent (" + std::to_string(source_tuples) + ")");
    }
  }

  sample report() const {
    sample s;
    s.wall_s = elapsed_s;
    const double src = elapsed_s > 0 ? static_cast<double>(source_tuples) / elapsed_s : 0;
    const double snk = elapsed_s > 0 ? static_cast<double>(sink_tuples) / elapsed_s : 0;
    s.add("source_tuples_per_s", src, "tuples/s", true);
    s.add("sink_tuples_per_s", snk, "tuples/s", true);
    if (rate > 0) s.add("offered_tuples_per_s", rate * static_cast<double>(replicas), "tuples/s", true);
    s.add("latency_p50_us", p50_us, "us");
    s.add("latency_p95_us", p95_us, "us");
    s.add("sink_tuples", static_cast<double>(sink_tuples), "tuples", true);
    s.add("source_tuples", static_cast<double>(source_tuples), "tuples", true);
    s.add("drain_s", elapsed_s - seconds, "s");
    return s;
  }
};

/// One run of either implementation (checked: outcome::check).
outcome troupe_outcome(const params& p);
outcome caf_outcome(const params& p);

/// A variant's parameters, all of them (see the header comment).
inline params variant_params(const app_info& a, std::int64_t rate, std::int64_t replicas, std::int64_t seconds,
                             std::int64_t workers) {
  return params{{"app", static_cast<std::int64_t>(a.id)},
                {"rate", rate},
                {"replicas", replicas},
                {"seconds", seconds},
                {"workers", workers}};
}

/// The spec of one of the three executables: both implementations, the
/// primary figure, and for each app of app_table the variants `per_app(app,
/// full)` gives.
template <class PerApp>
spec apps_spec(std::string name, std::string description, PerApp per_app) {
  spec s;
  s.name = std::move(name);
  s.description = std::move(description);
  s.impls = {{"troupe", run_troupe}, {"caf", run_caf}};
  // The sources run for a time, so the tuple count is not a parameter: the
  // primary figure is the implementations' extra figure sink_tuples_per_s
  // (named tuples_per_s here so that the JSON has one line per metric name).
  s.primary = metric{"tuples_per_s", "tuples/s", true, [](const sample& r, const params&) {
                       auto it = r.extra.find("sink_tuples_per_s");
                       return it == r.extra.end() ? 0.0 : it->second.value;
                     }};
  s.variants = [per_app](bool full) {
    std::vector<variant> v;
    for (auto& a : app_table())
      for (auto& one : per_app(a, full)) v.push_back(std::move(one));
    return v;
  };
  s.default_runs = 3;
  return s;
}

}  // namespace apps
}  // namespace bench
