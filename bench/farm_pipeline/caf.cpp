// farm_pipeline, CAF 0.17: event-based actors. The source hands tuples to the
// first-farm actors in turn and keeps at most `credit` tuples in flight; each
// first-farm actor works and passes the tuple to the second-farm actor of its
// key (key mod replicas, the replica troupe::by_key picks for an integer key
// with libstdc++'s identity hash); those work and pass it to the sink, which
// acknowledges every `ack_every` tuples so the source can refill.
#include "impls.hpp"

#include <vector>

#include "common/caf_support.hpp"

using bench::farm_pipeline::tuple;
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(bench::farm_pipeline::tuple)

namespace {

using go_atom = caf::atom_constant<caf::atom("go")>;
using ack_atom = caf::atom_constant<caf::atom("ack")>;
using done_atom = caf::atom_constant<caf::atom("done")>;

constexpr std::int64_t credit = 4096;
constexpr std::int64_t ack_every = 512;

struct source_state {
  std::int64_t next = 0;
  std::int64_t in_flight = 0;
  std::size_t turn = 0;
};

caf::behavior source(caf::stateful_actor<source_state>* self, std::vector<caf::actor> farm, std::int64_t tuples) {
  auto refill = [=] {
    auto& st = self->state;
    while (st.in_flight < credit && st.next < tuples) {
      self->send(farm[st.turn], bench::farm_pipeline::make_tuple(st.next));
      if (++st.turn == farm.size()) st.turn = 0;
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

caf::behavior first_worker(caf::event_based_actor* self, std::vector<caf::actor> keyed, std::int64_t spin) {
  return {[=](tuple x) {
    bench::farm_pipeline::work(x, spin);
    const auto i = static_cast<std::size_t>(x.key) % keyed.size();
    self->send(keyed[i], x);
  }};
}

caf::behavior keyed_worker(caf::event_based_actor* self, caf::actor next, std::int64_t spin) {
  return {[=](tuple x) {
    bench::farm_pipeline::work(x, spin);
    self->send(next, x);
  }};
}

struct sink_state {
  bench::farm_pipeline::tally t{0};  // replaced by the sink's spawn function
  caf::actor source;
  std::int64_t unacked = 0;
};

caf::behavior sink(caf::stateful_actor<sink_state>* self, caf::actor main, std::int64_t tuples, std::int64_t spin) {
  self->state.t = bench::farm_pipeline::tally{spin};
  return {[=](const tuple& x) {
            auto& st = self->state;
            st.t.add(x);
            if (st.source && ++st.unacked == ack_every) {
              self->send(st.source, ack_atom::value, st.unacked);
              st.unacked = 0;
            }
            if (st.t.count == tuples) {
              self->send(main, done_atom::value, st.t.count, st.t.sum, st.t.wrong_work);
              self->quit();
            }
          },
          [=](ack_atom, caf::actor src) { self->state.source = std::move(src); }};
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto tuples = p.get("tuples");
  const auto workers = p.get("workers");
  const auto replicas = p.get("replicas");
  const auto spin = p.get("spin");
  if (p.get_or("farms", 2) != 2) throw bench::not_available("one farm: troupe only");
  caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  auto snk = sys.spawn(sink, caf::actor_cast<caf::actor>(self), tuples, spin);
  std::vector<caf::actor> keyed, first;
  for (std::int64_t i = 0; i < replicas; ++i) keyed.push_back(sys.spawn(keyed_worker, snk, spin));
  for (std::int64_t i = 0; i < replicas; ++i) first.push_back(sys.spawn(first_worker, keyed, spin));
  auto src = sys.spawn(source, first, tuples);
  self->send(snk, ack_atom::value, src);  // before any tuple can arrive
  farm_pipeline::tally t{spin};
  stopwatch sw;
  self->send(src, go_atom::value);
  self->receive([&](done_atom, std::int64_t c, std::int64_t s, std::int64_t bad) {
    t.count = c;
    t.sum = s;
    t.wrong_work = bad;
  });
  sample s;
  s.wall_s = sw.seconds();
  t.check(tuples);
  return s;
}
