// app_sample.hpp: a run of one of the applications (apps/, troupe_apps), as a
// benchmark sample: its source's rate and how long it ran.
#pragma once

#include <stdexcept>

#include "common/app.hpp"
#include "common/harness.hpp"

namespace bench {

/// wall_s and elapsed_s: the run's own timed span; source_tuples_per_s.
/// Throws when the source emitted nothing.
inline sample app_sample(const troupe_apps::run_result& r) {
  if (r.source_tuples == 0) throw std::runtime_error("the source emitted nothing");
  sample s;
  s.wall_s = r.elapsed_s;
  s.add("source_tuples_per_s", r.source_rate(), "tuples/s", true);
  s.add("elapsed_s", r.elapsed_s, "s");
  return s;
}

}  // namespace bench
