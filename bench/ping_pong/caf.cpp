// ping_pong, CAF 0.17: two event-based actors; pong answers every ping to its
// sender, ping checks the sequence numbers and reports to the (blocking) main
// actor when done.
#include "impls.hpp"

#include "common/caf_support.hpp"

namespace {

using ping_atom = caf::atom_constant<caf::atom("ping")>;
using pong_atom = caf::atom_constant<caf::atom("pong")>;
using start_atom = caf::atom_constant<caf::atom("start")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using error_atom = caf::atom_constant<caf::atom("error")>;

caf::behavior pong(caf::event_based_actor* self) {
  return {
      [=](ping_atom, std::int64_t seq) {
        self->send(caf::actor_cast<caf::actor>(self->current_sender()), pong_atom::value, seq);
      },
  };
}

struct ping_state {
  std::int64_t received = 0;
};

caf::behavior ping(caf::stateful_actor<ping_state>* self, caf::actor buddy, std::int64_t round_trips, caf::actor main) {
  return {
      [=](start_atom) { self->send(buddy, ping_atom::value, std::int64_t{1}); },
      [=](pong_atom, std::int64_t seq) {
        auto expected = ++self->state.received;
        if (seq != expected) {
          self->send(main, error_atom::value, expected, seq);
          self->send_exit(buddy, caf::exit_reason::user_shutdown);
          self->quit();
          return;
        }
        if (seq < round_trips) {
          self->send(buddy, ping_atom::value, seq + 1);
          return;
        }
        self->send(main, done_atom::value, self->state.received);
        self->send_exit(buddy, caf::exit_reason::user_shutdown);
        self->quit();
      },
  };
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto round_trips = p.get("round_trips");
  const auto workers = p.get("workers");
  caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  auto b = sys.spawn(pong);
  auto a = sys.spawn(ping, b, round_trips, caf::actor_cast<caf::actor>(self));
  stopwatch sw;
  self->send(a, start_atom::value);
  std::int64_t received = -1;
  std::string failure;
  self->receive([&](done_atom, std::int64_t n) { received = n; },
                [&](error_atom, std::int64_t expected, std::int64_t got) {
                  failure =
                      "pong out of order: expected seq " + std::to_string(expected) + ", got " + std::to_string(got);
                });
  sample s;
  s.wall_s = sw.seconds();
  check(failure.empty(), failure);
  check_eq("pongs received", round_trips, received);
  return s;
}
