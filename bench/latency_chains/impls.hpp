// latency_chains (PDP 2019 "Map accelerator" latency benchmark, scaled to 2
// cores): `chains` chains of `length` actors; a generator (the main thread)
// sends `rate` messages per second round-robin to the chains' heads, each
// stamped with its emission time. In every chain the actor at position
// `heavy` does a compute-heavy step: a map over `elements` values with a
// synthetic function of `spin` iterations. The last actor of a chain records
// the end-to-end latency.
//
// params:
//   chains, length, heavy       20, 8, 3
//   rate, messages              1'000 msg/s, 1'000 messages (1 s)
//   elements, spin              5'000 values, 60 iterations (~0.1 us each:
//                               ~0.5 ms per heavy step, ~50% of 2 cores at 1,000 msg/s)
//   workers, map_workers        scheduler threads; accelerator team threads (0: none)
// impls:
//   troupe_seq  the heavy actor maps sequentially (the paper's "sequential actor")
//   troupe      the heavy actor asks one map accelerator shared by all chains
//   caf         CAF 0.17, heavy actor sequential
// Figure: avg_latency_us (mean end-to-end latency); p95 as an extra figure.
// Check: every message reaches the end of its chain, and the heavy step's
// result is right (sum of the mapped values; every 50th message is checked
// against a recomputation, after its latency is taken).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/harness.hpp"
#include "common/synthetic.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_troupe_seq(const params& p);
sample run_caf(const params& p);

namespace latency_chains {

inline std::vector<double> payload(std::int64_t seq, std::int64_t elements) {
  std::vector<double> v(static_cast<std::size_t>(elements));
  for (std::int64_t i = 0; i < elements; ++i) v[static_cast<std::size_t>(i)] = static_cast<double>(seq + i) * 1e-3;
  return v;
}

inline double heavy_sum(std::int64_t seq, std::int64_t elements, std::int64_t spin) {
  double s = 0;
  for (double x : payload(seq, elements)) s += synthetic_work(x, spin);
  return s;
}

/// Mean and 95th percentile (µs) of the latencies; checks count and results.
inline sample summarize(std::vector<std::int64_t>& latencies_ns, std::int64_t bad_results, const params& p) {
  check_eq("messages through the chains", p.get("messages"), static_cast<std::int64_t>(latencies_ns.size()));
  check_eq("wrong heavy-step results", 0, bad_results);
  std::sort(latencies_ns.begin(), latencies_ns.end());
  double sum = 0;
  for (auto l : latencies_ns) sum += static_cast<double>(l);
  sample s;
  s.wall_s = sum / static_cast<double>(latencies_ns.size()) / 1e9;  // mean latency, seconds
  s.add("p95_latency_us", static_cast<double>(latencies_ns[latencies_ns.size() * 95 / 100]) / 1e3, "us");
  return s;
}

}  // namespace latency_chains
}  // namespace bench
