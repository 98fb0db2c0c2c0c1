// token_ring, CAF 0.17: `actors` event-based actors, each forwarding the
// token (a hop count) to the next; the one that counts the last hop sends it
// to the (blocking) main actor.
#include "impls.hpp"

#include <vector>

#include "common/caf_support.hpp"

namespace {

using next_atom = caf::atom_constant<caf::atom("next")>;
using token_atom = caf::atom_constant<caf::atom("token")>;
using done_atom = caf::atom_constant<caf::atom("done")>;

struct member_state {
  caf::actor next;
};

caf::behavior member(caf::stateful_actor<member_state>* self, std::int64_t hops, caf::actor main) {
  return {
      [=](next_atom, caf::actor a) { self->state.next = std::move(a); },
      [=](token_atom, std::int64_t n) {
        if (++n == hops) self->send(main, done_atom::value, n);
        else self->send(self->state.next, token_atom::value, n);
      },
  };
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto actors = p.get("actors");
  const auto hops = p.get("hops");
  const auto workers = p.get("workers");
  caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  auto main = caf::actor_cast<caf::actor>(self);
  std::vector<caf::actor> ring;
  for (std::int64_t i = 0; i < actors; ++i) ring.push_back(sys.spawn(member, hops, main));
  for (std::size_t i = 0; i < ring.size(); ++i) self->send(ring[i], next_atom::value, ring[(i + 1) % ring.size()]);
  const double cpu0 = token_ring::process_cpu_s();
  stopwatch sw;
  self->send(ring[0], token_atom::value, std::int64_t{0});
  std::int64_t got = -1;
  self->receive([&](done_atom, std::int64_t n) { got = n; });
  sample s;
  token_ring::finish(s, sw, cpu0, hops);
  check_eq("hops counted", hops, got);
  for (auto& a : ring) self->send_exit(a, caf::exit_reason::user_shutdown);
  return s;
}
