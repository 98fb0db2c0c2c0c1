// farm_pipeline, troupe: the typed streaming layer. `troupe`: the two farms
// follow each other directly (router elimination); `troupe_router`: one
// identity node between them, as a collector + emitter would be.
#include "impls.hpp"

#include <memory>

#include <troupe/troupe.hpp>
#include "common/stream_graph.hpp"

namespace {

using bench::farm_pipeline::tuple;

struct source : troupe::stream::node<void, tuple> {
  std::int64_t i = 0, n = 0;
  bool produce() {
    if (i == n) return false;
    send_next(bench::farm_pipeline::make_tuple(i));
    ++i;
    return true;
  }
};

// A worker of the first (round-robin) farm.
struct first_worker : troupe::stream::node<tuple, tuple> {
  std::int64_t spin = 0;
  void consume(tuple& x) {
    bench::farm_pipeline::work(x, spin);
    send_next(std::move(x));
  }
};

// A worker of the second (keyed) farm; each replica records the keys it saw.
struct keyed_worker : troupe::stream::node<tuple, tuple> {
  std::int64_t spin = 0;
  std::shared_ptr<bench::farm_pipeline::key_log> log;
  std::bitset<bench::farm_pipeline::keys> seen;
  void consume(tuple& x) {
    seen.set(static_cast<std::size_t>(x.key));
    bench::farm_pipeline::work(x, spin);
    send_next(std::move(x));
  }
  void on_stop() { log->add(seen); }
};

struct sink : troupe::stream::node<tuple, void> {
  bench::farm_pipeline::tally* t = nullptr;
  void consume(const tuple& x) { t->add(x); }
};

bench::sample run_stream(const bench::params& p, bool with_router) {
  const auto tuples = p.get("tuples");
  const auto replicas = static_cast<std::size_t>(p.get("replicas"));
  const auto spin = p.get("spin");
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  const auto farms = p.get_or("farms", 2);
  if (farms == 1 && with_router) throw bench::not_available("one farm: no router to eliminate");
  bench::farm_pipeline::tally t{spin, farms};
  source src;
  src.n = tuples;
  first_worker w1;
  w1.spin = spin;
  keyed_worker w2;
  w2.spin = spin;
  w2.log = std::make_shared<bench::farm_pipeline::key_log>();
  sink snk;
  snk.t = &t;
  const auto key_of = troupe::by_key{[](const tuple& x) { return x.key; }};
  bench::sample s;
  if (farms == 1) {
    s = bench::time_graph(sys, troupe::pipeline{src, troupe::farm{w1, replicas}, snk});
  } else if (with_router) {
    auto identity = troupe::stream::map([](tuple x) { return x; });
    s = bench::time_graph(
        sys, troupe::pipeline{src, troupe::farm{w1, replicas}, identity, troupe::farm{w2, replicas, key_of}, snk});
  } else {
    s = bench::time_graph(sys,
                          troupe::pipeline{src, troupe::farm{w1, replicas}, troupe::farm{w2, replicas, key_of}, snk});
  }
  t.check(tuples);
  if (farms != 1) w2.log->check(tuples, static_cast<std::int64_t>(replicas));
  return s;
}

}  // namespace

bench::sample bench::run_troupe(const params& p) { return run_stream(p, false); }
bench::sample bench::run_troupe_router(const params& p) { return run_stream(p, true); }
