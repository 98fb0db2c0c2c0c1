// pipeline9, troupe: the typed streaming layer, nine nodes on the pool.
#include "impls.hpp"

#include <troupe/troupe.hpp>

namespace {

using bench::pipeline9::tuple;

struct source : troupe::stream::node<void, tuple> {
  std::int64_t i = 0, n = 0;
  bool produce() {
    if (i == n) return false;
    send_next(tuple{i % 1024, i, i});
    ++i;
    return true;
  }
};
struct forwarder : troupe::stream::node<tuple, tuple> {
  void consume(tuple& x) { send_next(std::move(x)); }
};
struct sink : troupe::stream::node<tuple, void> {
  bench::pipeline9::tally* t = nullptr;
  void consume(const tuple& x) { t->add(x); }
};

}  // namespace

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
