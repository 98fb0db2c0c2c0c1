// metrics_cost: what troupe::metrics costs a graph at full speed: the same
// workload without an exporter, with an exporter watching the graph, and with
// an exporter watching it while a scraper fetches GET /metrics and
// GET /api/graphs once a second (the target: <= 3% throughput).
//
// Workloads (variants):
//   pipeline3   bench/pipeline3's `troupe` graph (common/stream_nodes.hpp:
//               source -> forwarder -> sink of 24-byte tuples, channels of
//               1024 slots, nodes on the pool), run `graphs` times back to
//               back on one actor system (one run of pipeline3's size lasts
//               ~0.1 s, far less than a scrape interval); each graph is
//               watched as "pipeline3" as soon as it is spawned (replacing
//               the previous one)
//   wc          troupe-wc at full speed for `seconds`, as bench_apps_max_rate
//               runs it (bench/apps/impls.hpp's outcome and checks); its
//               exporter is the application's own (cli::metrics_port, i.e.
//               --metrics-port, on a free port found beforehand)
//
// params:
//   pipeline3: tuples   tuples per graph (pipeline3's: quick 5M, full 20M)
//              graphs   graphs per run (quick 120, full 40: 600M / 800M
//                       tuples, ~5-10 s at the 65-110M tuples/s pipeline3
//                       reaches on the 2-core machine)
//              workers  scheduler threads (2 and 1, as pipeline3)
//              forced   (instruction variants only) 1: no scraper thread; the
//                       troupe_scraped impl scrapes once per graph, right
//                       after spawning it (a scrape every `tuples` tuples)
//   wc:        app, rate, replicas, seconds, workers as bench_apps_max_rate
//              (rate 0, replicas 1, workers 2, seconds quick 5 / full 10)
//   both:      scrape_ms  scraper period (1000)
// impls:
//   troupe          no exporter
//   troupe_metrics  an exporter (127.0.0.1, any free port) watching the graph;
//                   nothing scrapes it
//   troupe_scraped  the same, plus a thread with an httplib::Client that
//                   fetches /metrics and then /api/graphs at the start of the
//                   measured region and every scrape_ms after it
// Measured region: pipeline3: from before the first graph's spawn until the
// last graph has ended (the exporter is made before it, the scraper thread
// starts in it); wc: the application's timed run (cli::on_run_start/end).
// Figure: tuples_per_s (sink tuples per wall second; = source tuples for
// pipeline3). Extras of troupe_scraped: scrapes (pairs of GETs), the
// client-side time of one GET /metrics and one GET /api/graphs (median and
// max over the run, ms) and the size of the last /metrics body.
// Check: pipeline3: every graph's sink got its `tuples` tuples, in order,
// with the right sum; wc: bench/apps' outcome::check. troupe_scraped: every
// GET answered 200 with a non-empty body, and at least one /metrics body
// names the watched graph; otherwise the run fails.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/harness.hpp"

namespace bench::metrics_cost {

enum class mode { plain, watched, scraped };

sample run(const params& p, mode m);
sample run_pipeline3(const params& p, mode m);
sample run_wc(const params& p, mode m);

/// Fetches GET /metrics and GET /api/graphs from 127.0.0.1:port, on its own
/// thread every `period` (the first pair at once), or only when scrape_once()
/// is called (period 0). Records what each answer took; a failed GET (no
/// answer, not 200, empty body) is kept and reported by finish().
class scraper {
 public:
  scraper(std::uint16_t port, std::string graph, std::chrono::milliseconds period);
  ~scraper();
  scraper(const scraper&) = delete;
  scraper& operator=(const scraper&) = delete;

  /// One pair of GETs, on the caller's thread (period 0 only).
  void scrape_once();
  /// Stops the thread (a scrape under way completes): before the exporter
  /// goes away.
  void stop();
  /// stop(), then checks every answer
  /// (throws std::runtime_error naming the first failure) and adds the
  /// extras to `s`.
  void finish(sample& s);

 private:
  struct state;
  std::unique_ptr<state> st_;
};

/// A TCP port on 127.0.0.1 that was free a moment ago (for the app's
/// --metrics-port, which takes a number).
std::uint16_t free_port();

}  // namespace bench::metrics_cost
