// mixed_case, CAF 0.17: the main (blocking) actor drives the rounds; ring
// members forward the token to their successor and, once a ring is done, a
// stop message travels around the ring so that its members terminate.
#include "impls.hpp"

#include <vector>

#include "common/caf_support.hpp"

namespace {

using next_atom = caf::atom_constant<caf::atom("next")>;
using token_atom = caf::atom_constant<caf::atom("token")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using ring_done_atom = caf::atom_constant<caf::atom("ringdone")>;
using factor_atom = caf::atom_constant<caf::atom("factor")>;
using factored_atom = caf::atom_constant<caf::atom("factored")>;

struct member_state {
  caf::actor next;
};

caf::behavior ring_member(caf::stateful_actor<member_state>* self, caf::actor next, std::int64_t hops,
                          caf::actor main) {
  self->state.next = std::move(next);
  return {
      [=](next_atom, caf::actor n) { self->state.next = std::move(n); },
      [=](token_atom, std::int32_t ring, std::int64_t k) {
        if (k < hops) {
          self->send(self->state.next, token_atom::value, ring, k + 1);
          return;
        }
        self->send(main, ring_done_atom::value, ring, k);
        self->send(self->state.next, stop_atom::value);
        self->quit();
      },
      [=](stop_atom) {
        self->send(self->state.next, stop_atom::value);
        self->quit();
      },
  };
}

caf::behavior factoriser(caf::event_based_actor* self, caf::actor main) {
  return {
      [=](factor_atom, std::int64_t n) {
        auto [p, q] = bench::mixed_case::factorise(static_cast<std::uint64_t>(n));
        self->send(main, factored_atom::value, static_cast<std::int64_t>(p), static_cast<std::int64_t>(q));
        self->quit();
      },
  };
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto rings = static_cast<std::int32_t>(p.get("rings"));
  const auto ring_size = p.get("ring_size");
  const auto hops = p.get("hops");
  const auto rounds = p.get("rounds");
  const auto semiprime = p.get("semiprime");
  const auto factor_p = p.get("factor_p");
  const auto factor_q = p.get("factor_q");
  const auto workers = p.get("workers");
  check(ring_size >= 2, "ring_size must be >= 2");
  caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  auto main = caf::actor_cast<caf::actor>(self);
  std::string failure;
  std::int64_t rings_ok = 0;
  std::int64_t factorisations_ok = 0;
  stopwatch sw;
  for (std::int64_t round = 0; round < rounds; ++round) {
    auto f = sys.spawn(factoriser, main);
    self->send(f, factor_atom::value, semiprime);
    for (std::int32_t r = 0; r < rings; ++r) {
      // The head learns its successor (the last member spawned) afterwards.
      auto head = sys.spawn(ring_member, caf::actor{}, hops, main);
      auto succ = head;
      for (std::int64_t i = 1; i < ring_size; ++i) succ = sys.spawn(ring_member, succ, hops, main);
      self->send(head, next_atom::value, succ);
      self->send(head, token_atom::value, r, std::int64_t{0});
    }
    std::vector<int> seen(static_cast<size_t>(rings), 0);
    int pending = rings + 1;
    while (pending > 0) {
      self->receive(
          [&](ring_done_atom, std::int32_t r, std::int64_t k) {
            --pending;
            if (r >= 0 && r < rings && k == hops && seen[static_cast<size_t>(r)]++ == 0) ++rings_ok;
            else if (failure.empty())
              failure = "round " + std::to_string(round) + ": ring " + std::to_string(r) + " reported " +
                        std::to_string(k) + " hops (or twice)";
          },
          [&](factored_atom, std::int64_t fp, std::int64_t fq) {
            --pending;
            if (fp == factor_p && fq == factor_q) ++factorisations_ok;
            else if (failure.empty())
              failure = "round " + std::to_string(round) + ": factorisation gave " + std::to_string(fp) + " * " +
                        std::to_string(fq);
          });
    }
  }
  sample s;
  s.wall_s = sw.seconds();
  check(failure.empty(), failure);
  check_eq("rings completed", rounds * rings, rings_ok);
  check_eq("factorisations correct", rounds, factorisations_ok);
  return s;
}
