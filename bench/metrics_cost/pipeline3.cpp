// metrics_cost, pipeline3: bench/pipeline3's `troupe` graph (the nodes of
// common/stream_nodes.hpp, channels of 1024 slots, on the pool), `graphs`
// times on one actor system.
#include <troupe/metrics/exporter.hpp>
#include <troupe/troupe.hpp>

#include <optional>

#include "common/stream_nodes.hpp"
#include "impls.hpp"

bench::sample bench::metrics_cost::run_pipeline3(const params& p, mode m) {
  const auto tuples = p.get("tuples");
  const auto graphs = p.get("graphs");
  const bool forced = p.get_or("forced", 0) != 0;
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  std::optional<troupe::metrics::exporter> ex;
  if (m != mode::plain) ex.emplace(sys);
  std::optional<scraper> scr;
  troupe::stream::options o;
  o.capacity = 1024;
  o.placement = troupe::placement::pool();
  stopwatch sw;
  if (m == mode::scraped)
    scr.emplace(ex->port(), "pipeline3",
                forced ? std::chrono::milliseconds{0} : std::chrono::milliseconds{p.get("scrape_ms")});
  for (std::int64_t i = 0; i < graphs; ++i) {
    stream_tuple::tally t;
    stream_tuple::source src;
    src.n = tuples;
    stream_tuple::sink snk;
    snk.t = &t;
    auto g = troupe::spawn_pattern(sys, troupe::pipeline{src, stream_tuple::forwarder{}, snk}, o);
    if (ex) ex->watch("pipeline3", g);
    if (scr && forced) scr->scrape_once();
    g.wait();
    t.check(tuples);
  }
  sample s;
  s.wall_s = sw.seconds();
  if (scr) scr->finish(s);
  const double total = static_cast<double>(tuples) * static_cast<double>(graphs);
  s.add("source_tuples", total, "tuples", true);
  s.add("sink_tuples_per_s", total / s.wall_s, "tuples/s", true);
  return s;
}
