// run_stream.hpp: how pipeline3's stream impls run a graph of the three
// nodes (troupe.cpp, troupe_chain.cpp): `build(source, sink)` makes it.
#pragma once

#include <troupe/troupe.hpp>

#include "common/stream_graph.hpp"
#include "common/stream_nodes.hpp"
#include "impls.hpp"

namespace bench::pipeline3 {

template <class Build>
sample run_stream(const params& p, Build build, troupe::placement where = troupe::placement::pool()) {
  const auto tuples = p.get("tuples");
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  tally t;
  stream_tuple::source src;
  src.n = tuples;
  stream_tuple::sink snk;
  snk.t = &t;
  auto s = time_graph(sys, build(src, snk), where);
  t.check(tuples);
  return s;
}

}  // namespace bench::pipeline3
