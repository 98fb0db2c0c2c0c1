// metrics_cost, wc: troupe-wc at full speed as bench_apps_max_rate runs it
// (bench/apps/impls.hpp: outcome, checks, figures), with the application's
// own exporter (cli::metrics_port, what --metrics-port sets).
#include <numeric>
#include <optional>

#include "apps/impls.hpp"
#include "impls.hpp"
#include "wc/wc.hpp"

bench::sample bench::metrics_cost::run_wc(const params& p, mode m) {
  apps::outcome o{p};
  check(o.id == apps::app::wc, "metrics_cost: only wc is an app variant here");
  troupe_apps::cli c;
  c.input = apps::wc_input();
  c.duration = o.passes != 0 ? 0 : o.seconds;
  c.passes = o.passes;
  c.rate = o.rate;
  c.parallelism.assign(apps::info(p.get("app")).operators, o.replicas);
  const std::uint16_t port = m == mode::plain ? 0 : free_port();
  if (m != mode::plain) c.metrics_port = port;
  // The measured region is the app's own timed run; the scraper starts with
  // it (the exporter exists by then: run_graph makes it before timing).
  std::optional<stopwatch> region;
  std::optional<scraper> scr;
  c.on_run_start = [&] {
    region.emplace();
    if (m == mode::scraped) scr.emplace(port, "wc", std::chrono::milliseconds{p.get("scrape_ms")});
  };
  c.on_run_end = [&] {
    (void)region->seconds();
    if (scr) scr->stop();  // the exporter ends with run_graph
  };
  troupe::actor_system sys{troupe::config{.workers = o.workers}};
  auto w = troupe_apps::wc::run(sys, c);
  o.words = std::accumulate(w.final_counts.begin(), w.final_counts.end(), std::uint64_t{0},
                            [](std::uint64_t a, const auto& kv) { return a + kv.second; });
  o.elapsed_s = w.result.elapsed_s;
  o.source_tuples = w.result.source_tuples;
  o.sink_tuples = w.result.sink_tuples;
  o.p50_us = static_cast<double>(w.result.latency.percentile(0.5)) / 1000.0;
  o.p95_us = static_cast<double>(w.result.latency.percentile(0.95)) / 1000.0;
  o.check();
  sample s = o.report();
  if (scr) scr->finish(s);
  return s;
}
