// apps, troupe: the applications themselves (troupe_apps::<app>::run) with
// their default input; cli::rate paces each source replica, cli::parallelism
// gives every operator `replicas` (lr: every operator but the sink, which
// joins the three branches and has one).
#include "impls.hpp"

#include <numeric>
#include <optional>
#include <string>

#include "fd/fd.hpp"
#include "lr/lr.hpp"
#include "sd/sd.hpp"
#include "wc/wc.hpp"

namespace {

using bench::apps::outcome;
using troupe_apps::cli;
using troupe_apps::run_result;

run_result run_wc(troupe::actor_system& sys, cli& c, outcome& o) {
  c.input = bench::apps::wc_input();
  auto w = troupe_apps::wc::run(sys, c);
  // A counter counts every word it gets once; the sum of the final counts is
  // the number of words the splitters produced.
  o.words = std::accumulate(w.final_counts.begin(), w.final_counts.end(), std::uint64_t{0},
                            [](std::uint64_t a, const auto& kv) { return a + kv.second; });
  if (o.passes != 0) o.computed.word_counts = std::move(w.final_counts);
  return std::move(w.result);
}

run_result run_fd(troupe::actor_system& sys, cli& c, outcome& o) {
  // c.input stays empty: the application generates its 800,000 transactions.
  c.extra["model"] = bench::apps::fd_model();
  auto f = troupe_apps::fd::run(sys, c, o.passes != 0);
  o.computed.outliers = std::move(f.outliers);
  return std::move(f.result);
}

run_result run_sd(troupe::actor_system& sys, cli& c, outcome& o) {
  // c.input stays empty: the application generates its 1,000,000 readings.
  c.extra["window"] = std::to_string(bench::apps::sd_window);
  c.extra["threshold"] = std::to_string(bench::apps::sd_threshold);
  auto d = troupe_apps::sd::run(sys, c);
  if (o.passes != 0) o.computed.spikes = std::move(d.spikes);
  return std::move(d.result);
}

run_result run_lr(troupe::actor_system& sys, cli& c, outcome& o) {
  // c.input stays empty: the application generates the traffic.
  c.extra["minutes"] = std::to_string(bench::apps::lr_minutes);
  c.extra["xways"] = std::to_string(bench::apps::lr_xways);
  c.parallelism.back() = 1;  // the sink (lr::run requires one replica)
  auto r = troupe_apps::lr::run(sys, c, o.passes != 0);
  o.tolls_assessed = r.assessed;
  o.tolls_charged = r.charged;
  o.computed.tolls = std::move(r.tolls);
  return std::move(r.result);
}

}  // namespace

bench::apps::outcome bench::apps::troupe_outcome(const params& p) {
  outcome o{p};
  const auto& app = apps::info(p.get("app"));
  cli c;
  c.duration = o.passes != 0 ? 0 : o.seconds;
  c.passes = o.passes;
  c.rate = o.rate;
  c.parallelism.assign(app.operators, o.replicas);
  // The measured region (for --instructions) is the app's own timed run.
  std::optional<bench::stopwatch> region;
  c.on_run_start = [&region] { region.emplace(); };
  c.on_run_end = [&region] { (void)region->seconds(); };
  troupe::actor_system sys{troupe::config{.workers = o.workers}};
  run_result r;
  switch (app.id) {
    case apps::app::wc:
      r = run_wc(sys, c, o);
      break;
    case apps::app::fd:
      r = run_fd(sys, c, o);
      break;
    case apps::app::sd:
      r = run_sd(sys, c, o);
      break;
    case apps::app::lr:
      r = run_lr(sys, c, o);
      break;
  }
  check_eq(std::string{app.name} + ": operators (app_table against the application's graph)",
           static_cast<std::int64_t>(app.operators), static_cast<std::int64_t>(r.parallelism.size()));
  o.elapsed_s = r.elapsed_s;
  o.source_tuples = r.source_tuples;
  o.sink_tuples = r.sink_tuples;
  o.p50_us = static_cast<double>(r.latency.percentile(0.5)) / 1000.0;
  o.p95_us = static_cast<double>(r.latency.percentile(0.95)) / 1000.0;
  o.check();
  return o;
}

bench::sample bench::run_troupe(const params& p) { return apps::troupe_outcome(p).report(); }
