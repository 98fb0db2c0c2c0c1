// pipeline9, CAF 0.17: event-based actors. The source sends in chunks of 1000
// and re-triggers itself; seven forwarders pass every tuple on; the sink
// tallies. Mailboxes are unbounded, as in plain CAF.
#include "impls.hpp"

#include "common/stream_caf.hpp"

using bench::pipeline9::tuple;

namespace {

using bench::stream_caf::go_atom;

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
      bench::stream_caf::report(self, main, t);
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
  auto src = sys.spawn(stream_caf::chunked_source, next, tuples);
  stopwatch sw;
  self->send(src, go_atom::value);
  const auto t = stream_caf::await_report(self);
  sample s;
  s.wall_s = sw.seconds();
  t.check(tuples);
  return s;
}
