// mixed_case, troupe: the scoped main actor drives the rounds; ring members
// forward the token to their successor; once a ring is done a stop message
// travels around it so its members end. Same structure as the CAF version.
#include "impls.hpp"

#include <troupe/troupe.hpp>

#include <vector>

namespace {
struct next_msg {
  troupe::actor next;
};
struct token_msg {
  std::int32_t ring;
  std::int64_t hop;
};
struct stop_atom {};
struct ring_done {
  std::int32_t ring;
  std::int64_t hops;
};
struct factored {
  std::int64_t p, q;
};

troupe::behavior ring_member(troupe::event_actor& self, troupe::actor next, std::int64_t hops, troupe::actor main) {
  auto succ = std::make_shared<troupe::actor>(std::move(next));
  return {[succ](next_msg& m) { *succ = std::move(m.next); },
          [&self, succ, hops, main](token_msg t) {
            if (t.hop < hops) {
              self.send(*succ, token_msg{t.ring, t.hop + 1});
              return;
            }
            self.send(main, ring_done{t.ring, t.hop});
            self.send(*succ, stop_atom{});
            self.quit();
          },
          [&self, succ](stop_atom) {
            self.send(*succ, stop_atom{});
            self.quit();
          }};
}
}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto rings = static_cast<std::int32_t>(p.get("rings"));
  const auto ring_size = p.get("ring_size");
  const auto hops = p.get("hops");
  const auto rounds = p.get("rounds");
  const auto semiprime = p.get("semiprime");
  const auto factor_p = p.get("factor_p");
  const auto factor_q = p.get("factor_q");
  const auto workers = static_cast<std::size_t>(p.get("workers"));
  check(ring_size >= 2, "ring_size must be >= 2");
  troupe::actor_system sys{troupe::config{.workers = workers}};
  troupe::scoped_actor self{sys};
  auto main = self.handle();
  std::string failure;
  std::int64_t rings_ok = 0, factorisations_ok = 0;
  stopwatch sw;
  for (std::int64_t round = 0; round < rounds; ++round) {
    auto f = sys.spawn([main](troupe::event_actor& s) {
      return troupe::behavior{[&s, main](std::int64_t n) {
        auto [fp, fq] = bench::mixed_case::factorise(static_cast<std::uint64_t>(n));
        s.send(main, factored{static_cast<std::int64_t>(fp), static_cast<std::int64_t>(fq)});
        s.quit();
      }};
    });
    self->send(f, semiprime);
    for (std::int32_t r = 0; r < rings; ++r) {
      auto head = sys.spawn(ring_member, troupe::actor{}, hops, main);
      auto succ = head;
      for (std::int64_t i = 1; i < ring_size; ++i) succ = sys.spawn(ring_member, succ, hops, main);
      self->send(head, next_msg{succ});
      self->send(head, token_msg{r, 0});
    }
    std::vector<int> seen(static_cast<std::size_t>(rings), 0);
    int pending = rings + 1;
    while (pending > 0)
      self->receive(
          [&](ring_done d) {
            --pending;
            if (d.ring >= 0 && d.ring < rings && d.hops == hops && seen[static_cast<std::size_t>(d.ring)]++ == 0)
              ++rings_ok;
            else if (failure.empty())
              failure = "round " + std::to_string(round) + ": ring " + std::to_string(d.ring) + " reported " +
                        std::to_string(d.hops) + " hops (or twice)";
          },
          [&](factored fr) {
            --pending;
            if (fr.p == factor_p && fr.q == factor_q) ++factorisations_ok;
            else if (failure.empty())
              failure = "round " + std::to_string(round) + ": factorisation gave " + std::to_string(fr.p) + " * " +
                        std::to_string(fr.q);
          });
  }
  sample s;
  s.wall_s = sw.seconds();
  check(failure.empty(), failure);
  check_eq("rings completed", rounds * rings, rings_ok);
  check_eq("factorisations correct", rounds, factorisations_ok);
  return s;
}
