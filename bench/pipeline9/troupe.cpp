// pipeline9, troupe: the typed streaming layer, nine nodes on the pool.
#include "impls.hpp"

#include <troupe/troupe.hpp>

#include "common/stream_nodes.hpp"

using bench::stream_tuple::forwarder;
using bench::stream_tuple::sink;
using bench::stream_tuple::source;

bench::sample bench::run_troupe(const params& p) {
  static_assert(pipeline9::forwarders == 7, "the pipeline below spells out seven forwarders");
  const auto tuples = p.get("tuples");
  troupe::actor_system sys{troupe::config{}.workers(static_cast<std::size_t>(p.get("workers")))};
  pipeline9::tally t;
  source src;
  src.n = tuples;
  sink snk;
  snk.t = &t;
  const forwarder f{};
  troupe::stream::options o;
  o.capacity = 1024;
  o.placement = troupe::stream::placement::pool;
  stopwatch sw;
  auto g = troupe::spawn_pattern(sys, troupe::pipeline{src, f, f, f, f, f, f, f, snk}, o);
  g.wait();
  sample s;
  s.wall_s = sw.seconds();
  t.check(tuples);
  return s;
}
