// token_ring: one token passed around a ring of actors; a sequential actor
// workload, so one core is enough and a second worker has nothing to do.
// It shows what idle workers cost: with 2 workers the run must not use a
// second core (cpu_per_wall near 1) nor be slower than with 1 worker.
//
// params:
//   actors   actors in the ring (100)
//   hops     times the token is passed on, in all (2'000'000)
//   workers  scheduler worker threads (1 or 2)
// Measured region: from the token sent to the first actor until the main
// thread receives it back after the last hop. Figures: hops_per_s; extra
// cpu_per_wall = (user + system CPU of the whole process) / wall over the
// measured region (getrusage around it: every thread, the idle workers
// included), and cpu_ns_per_hop, the same CPU time per hop. Check: the token arrives with exactly `hops` hops counted.
#pragma once

#include <sys/resource.h>

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_caf(const params& p);

namespace token_ring {

/// CPU seconds (user + system) of the whole process so far.
inline double process_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

/// Fills in wall time, cpu_per_wall and cpu_ns_per_hop from the measured
/// region's start. CPU per hop still shows an idle worker's burn when other
/// processes share the cores (cpu_per_wall then stays under their share).
inline void finish(sample& s, const stopwatch& sw, double cpu0, std::int64_t hops) {
  s.wall_s = sw.seconds();
  const double cpu = process_cpu_s() - cpu0;
  s.add("cpu_per_wall", s.wall_s > 0 ? cpu / s.wall_s : 0, "cpu/wall");
  s.add("cpu_ns_per_hop", cpu * 1e9 / static_cast<double>(hops), "ns/hop");
}

}  // namespace token_ring
}  // namespace bench
