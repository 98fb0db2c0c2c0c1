// pipeline9, CAF 0.17: event-based actors. The source sends in chunks of 1000
// and re-triggers itself; seven forwarders pass every tuple on; the sink
// tallies. Mailboxes are unbounded, as in plain CAF.
#include "impls.hpp"

#include "common/caf_support.hpp"

using bench::pipeline9::tuple;
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(bench::pipeline9::tuple)

namespace {

using go_atom = caf::atom_constant<caf::atom("go")>;
using done_atom = caf::atom_constant<caf::atom("done")>;

struct source_state {
  std::int64_t next = 0;
};

caf::behavior source(caf::stateful_actor<source_state>* self, caf::actor next, std::int64_t tuples) {
  return {[=](go_atom) {
    auto& i = self->state.next;
    for (int k = 0; k < 1000 && i < tuples; ++k, ++i) self->send(next, tuple{i % 1024, i, i});
    if (i < tuples) self->send(self, go_atom::value);
    else self->quit();
  }};
}

caf::behavior forwarder(caf::event_based_actor* self, caf::actor next) {
  return {[=](const tuple& x) { self->send(next, x); }};
}

struct sink_state {
  bench::pipeline9::tally t;
};

caf::behavior sink(caf::stateful_actor<sink_state>* self, caf::actor main, std::int64_t tuples) {
  return {[=](const tuple& x) {
    auto& t = self->state.t;
    t.add(x);
    if (t.count == tuples) {
      self->send(main, done_atom::value, t.count, t.sum, t.out_of_order);
      self->quit();
    }
  }};
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto tuples = p.get("tuples");
  const auto workers = p.get("workers");
  caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  caf::actor next = sys.spawn(sink, caf::actor_cast<caf::actor>(self), tuples);
  for (int k = 0; k < pipeline9::forwarders; ++k) next = sys.spawn(forwarder, next);
  auto src = sys.spawn(source, next, tuples);
  stopwatch sw;
  self->send(src, go_atom::value);
  pipeline9::tally t;
  self->receive([&](done_atom, std::int64_t c, std::int64_t s, std::int64_t b) {
    t.count = c;
    t.sum = s;
    t.out_of_order = b;
  });
  sample s;
  s.wall_s = sw.seconds();
  t.check(tuples);
  return s;
}
