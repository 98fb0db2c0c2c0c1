// stream_graph.hpp: how the streaming benchmarks run a troupe stream graph.
#pragma once

#include <utility>

#include <troupe/troupe.hpp>

#include "common/harness.hpp"

namespace bench {

/// Spawns `pattern` with channels of 1024 slots and the given placement and
/// waits for its end; the sample's wall time is that span.
template <class P>
sample time_graph(troupe::actor_system& sys, P pattern, troupe::placement where = troupe::placement::pool()) {
  troupe::stream::options o;
  o.capacity = 1024;
  o.placement = where;
  stopwatch sw;
  auto g = troupe::spawn_pattern(sys, std::move(pattern), o);
  g.wait();
  sample s;
  s.wall_s = sw.seconds();
  return s;
}

}  // namespace bench
