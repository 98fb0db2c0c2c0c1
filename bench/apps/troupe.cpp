// apps_max_rate, troupe: the applications themselves (troupe_apps::wc::run,
// troupe_apps::fd::run) with their default input, one replica per operator,
// the source at full speed for `seconds`.
#include "impls.hpp"

#include <numeric>

#include "fd/fd.hpp"
#include "wc/wc.hpp"

bench::sample bench::run_troupe(const params& p) {
  using namespace apps_max_rate;
  const auto app = p.get("app");
  app_name(app);  // rejects an unknown app
  troupe_apps::cli c;
  c.duration = static_cast<double>(p.get("seconds"));
  // c.parallelism stays empty: one replica per operator.
  troupe::actor_system sys{troupe::config{}.workers(static_cast<std::size_t>(p.get("workers")))};
  outcome o;
  o.app = app;
  o.seconds = c.duration;
  troupe_apps::run_result r;
  if (app == app_wc) {
    c.input = wc_input();
    auto w = troupe_apps::wc::run(sys, c);
    // The counter counts every word it gets once; the sum of its final
    // counts is the number of words the splitter produced.
    o.words = std::accumulate(w.final_counts.begin(), w.final_counts.end(), std::uint64_t{0},
                              [](std::uint64_t a, const auto& kv) { return a + kv.second; });
    r = std::move(w.result);
  } else {
    // c.input stays empty: the application generates its 800,000 transactions.
    c.extra["model"] = fd_model();
    r = troupe_apps::fd::run(sys, c).result;
  }
  o.elapsed_s = r.elapsed_s;
  o.source_tuples = r.source_tuples;
  o.sink_tuples = r.sink_tuples;
  o.p50_us = static_cast<double>(r.latency.percentile(0.5)) / 1000.0;
  o.p95_us = static_cast<double>(r.latency.percentile(0.95)) / 1000.0;
  o.check();
  return o.report();
}
