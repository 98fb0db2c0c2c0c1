// pipeline9, troupe: the typed streaming layer, nine nodes on the pool.
#include "impls.hpp"

#include <troupe/troupe.hpp>

#include "common/stream_graph.hpp"
#include "common/stream_nodes.hpp"

using bench::stream_tuple::forwarder;
using bench::stream_tuple::sink;
using bench::stream_tuple::source;

bench::sample bench::run_troupe(const params& p) {
  static_assert(pipeline9::forwarders == 7, "the pipeline below spells out seven forwarders");
  const auto tuples = p.get("tuples");
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  pipeline9::tally t;
  source src;
  src.n = tuples;
  sink snk;
  snk.t = &t;
  const forwarder f{};
  auto s = time_graph(sys, troupe::pipeline{src, f, f, f, f, f, f, f, snk});
  t.check(tuples);
  return s;
}
