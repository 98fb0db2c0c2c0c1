// pattern_request: a pattern used from actors, one request per item.
// `clients` event actors each send `items / clients` requests to one spawned
// pattern, pipeline{farm{f, replicas}, g}, keeping `window` requests in
// flight; each answer is the item's result. This is the actor-facing use of
// patterns (the "macro actor" of the papers): what a request through a farm
// and a stage costs, end to end, on each engine.
//
// params:
//   clients, window   4 actors, 8 requests in flight each
//   items             requests in all (200'000 quick, 1'000'000 full)
//   replicas          replicas of the farm (2)
//   spin              synthetic work per item in f (0: pure overhead; 600: ~1 us)
//   workers           scheduler threads (1 or 2)
// Measured region: from the first request sent to the last answer received.
// Figure: items_per_s = items / wall_s; extra figures: p50_us and p99_us, the
// latency of a request (sent -> answered) over every request.
// Check: every request is answered once, with 3 * x for item x.
// impls:
//   troupe  spawn_pattern: a stream graph with an entry actor and a reply
//           stage (this tree); built from an older tree, the same source
//           measures the old actor engine (one actor per stage replica and an
//           envelope per hop): see docs/performance.md
//   caf     CAF 0.17: a front actor delegates round robin to `replicas` worker
//           actors, which delegate to the last stage; it answers the client
//           (CAF's own way to pass a request down a chain of actors)
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/harness.hpp"
#include "common/synthetic.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_caf(const params& p);

namespace pattern_request {

/// The farm's function: 3x + 1, after `spin` steps of synthetic work.
inline std::int64_t first_stage(std::int64_t x, std::int64_t spin) {
  return 3 * x + 1 + static_cast<std::int64_t>(synthetic_work(static_cast<double>(x), spin) * 0.0);
}
/// The last stage's function.
inline std::int64_t last_stage(std::int64_t y) { return y - 1; }

/// What one client measured.
struct client_report {
  std::vector<std::int64_t> latencies_ns;
  std::int64_t wrong = 0;
};

/// Items of client c (0-based): c, c + clients, c + 2 clients, ...
inline std::int64_t share(const params& p, std::int64_t c) {
  const auto clients = p.get("clients"), items = p.get("items");
  return items / clients + (c < items % clients ? 1 : 0);
}

/// Checks the answers and the count; fills the figures.
inline sample summarize(std::vector<client_report>& reports, double wall_s, const params& p) {
  std::vector<std::int64_t> all;
  std::int64_t wrong = 0;
  for (auto& r : reports) {
    all.insert(all.end(), r.latencies_ns.begin(), r.latencies_ns.end());
    wrong += r.wrong;
  }
  check_eq("answered requests", p.get("items"), static_cast<std::int64_t>(all.size()));
  check_eq("wrong answers", 0, wrong);
  std::sort(all.begin(), all.end());
  sample s;
  s.wall_s = wall_s;
  auto at = [&](double q) {
    return static_cast<double>(all[static_cast<std::size_t>(q * static_cast<double>(all.size() - 1))]) / 1e3;
  };
  s.add("p50_us", at(0.50), "us", false);
  s.add("p99_us", at(0.99), "us", false);
  return s;
}

}  // namespace pattern_request
}  // namespace bench
