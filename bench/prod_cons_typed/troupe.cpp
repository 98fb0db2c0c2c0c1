// prod_cons_typed, troupe: a two-node stream graph (source -> sink of
// std::int64_t), each node on its own thread (`troupe`) or both on the pool
// (`troupe_pool`).
#include "impls.hpp"

#include <troupe/troupe.hpp>
#include "common/stream_graph.hpp"

namespace {

struct source : troupe::stream::node<void, std::int64_t> {
  std::int64_t i = 0, n = 0;
  bool produce() {
    if (i == n) return false;
    send_next(std::int64_t{i});
    ++i;
    return true;
  }
};

struct sink : troupe::stream::node<std::int64_t, void> {
  bench::prod_cons_typed::tally* t = nullptr;
  void consume(const std::int64_t& x) { t->add(x); }
};

bench::sample run_stream(const bench::params& p, troupe::placement where) {
  const auto items = p.get("items");
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  bench::prod_cons_typed::tally t;
  source src;
  src.n = items;
  sink snk;
  snk.t = &t;
  auto s = bench::time_graph(sys, troupe::pipeline{src, snk}, where);
  t.check(items);
  return s;
}

}  // namespace

bench::sample bench::run_troupe(const params& p) { return run_stream(p, troupe::placement::own_thread()); }
bench::sample bench::run_troupe_pool(const params& p) { return run_stream(p, troupe::placement::pool()); }
