// pipeline3, CAF 0.17: event-based actors. `caf`: the source sends in chunks
// of 1000 and re-triggers itself (unbounded mailboxes). `caf_credit`: the
// source keeps at most `credit` tuples in flight; the sink acknowledges every
// `ack` tuples and the source refills.
#include "impls.hpp"

#include "common/stream_caf.hpp"

using bench::pipeline3::tuple;

namespace {

using bench::stream_caf::go_atom;
using ack_atom = caf::atom_constant<caf::atom("ack")>;

constexpr std::int64_t credit = 4096;
constexpr std::int64_t ack_every = 512;

struct source_state {
  std::int64_t next = 0;
  std::int64_t in_flight = 0;
};

caf::behavior credit_source(caf::stateful_actor<source_state>* self, caf::actor next, std::int64_t tuples) {
  auto refill = [=] {
    auto& st = self->state;
    while (st.in_flight < credit && st.next < tuples) {
      self->send(next, tuple{st.next % 1024, st.next, st.next});
      ++st.next;
      ++st.in_flight;
    }
    if (st.next == tuples) self->quit();
  };
  return {[=](go_atom) { refill(); },
          [=](ack_atom, std::int64_t n) {
            self->state.in_flight -= n;
            refill();
          }};
}

caf::behavior forwarder(caf::event_based_actor* self, caf::actor next) {
  return {[=](const tuple& x) { self->send(next, x); }};
}

struct sink_state {
  bench::pipeline3::tally t;
  caf::actor source;  // set for the credit variant: where acknowledgements go
  std::int64_t unacked = 0;
};

caf::behavior sink(caf::stateful_actor<sink_state>* self, caf::actor main, std::int64_t tuples) {
  return {[=](const tuple& x) {
            auto& st = self->state;
            st.t.add(x);
            if (st.source && ++st.unacked == ack_every) {
              self->send(st.source, ack_atom::value, st.unacked);
              st.unacked = 0;
            }
            if (st.t.count == tuples) {
              bench::stream_caf::report(self, main, st.t);
              self->quit();
            }
          },
          [=](ack_atom, caf::actor src) { self->state.source = std::move(src); }};
}

bench::sample run(const bench::params& p, bool with_credit) {
  const auto tuples = p.get("tuples");
  const auto workers = p.get("workers");
  bench::caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  bench::caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  auto snk = sys.spawn(sink, caf::actor_cast<caf::actor>(self), tuples);
  auto fwd = sys.spawn(forwarder, snk);
  auto src =
      with_credit ? sys.spawn(credit_source, fwd, tuples) : sys.spawn(bench::stream_caf::chunked_source, fwd, tuples);
  if (with_credit) self->send(snk, ack_atom::value, src);  // before any tuple can arrive
  bench::stopwatch sw;
  self->send(src, go_atom::value);
  const auto t = bench::stream_caf::await_report(self);
  bench::sample s;
  s.wall_s = sw.seconds();
  t.check(tuples);
  return s;
}

}  // namespace

bench::sample bench::run_caf(const params& p) { return run(p, false); }
bench::sample bench::run_caf_credit(const params& p) { return run(p, true); }
