// Shared CAF 0.17 set-up for the caf.cpp translation units of the benchmarks.
// Only include this from caf.cpp files (CAF headers are heavy).
#pragma once

#include <cstddef>
#include <cstdint>

#include <caf/all.hpp>

namespace bench::caf_support {

/// The configuration every CAF benchmark uses: the default work-stealing
/// scheduler with exactly `workers` worker threads. `max_throughput` is the
/// number of messages an actor may handle per activation before it yields its
/// worker; 0 keeps CAF's default (unlimited).
///
/// Note that setting "scheduler.max-threads" / "scheduler.max-throughput" via
/// actor_system_config::set is read when the actor_system is constructed; the
/// values have to be integers (config_value has no unsigned type).
class config : public caf::actor_system_config {
 public:
  explicit config(std::int64_t workers, std::int64_t max_throughput = 0) {
    set("scheduler.max-threads", static_cast<caf::config_value::integer>(workers));
    if (max_throughput > 0) set("scheduler.max-throughput", static_cast<caf::config_value::integer>(max_throughput));
  }
};

/// Throws std::runtime_error if the actor system does not have the expected
/// number of workers (guards against the setting silently not applying).
inline void check_workers(caf::actor_system& sys, std::int64_t workers) {
  auto n = static_cast<std::int64_t>(sys.scheduler().num_workers());
  if (n != workers)
    throw std::runtime_error("CAF scheduler has " + std::to_string(n) + " workers, expected " +
                             std::to_string(workers));
}

}  // namespace bench::caf_support
