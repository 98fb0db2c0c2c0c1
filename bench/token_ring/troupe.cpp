// token_ring, troupe: `actors` event actors, each forwarding the token (a hop
// count) to the next; the one that counts the last hop sends it to main.
#include "impls.hpp"

#include <memory>
#include <vector>

#include <troupe/troupe.hpp>

namespace {
struct token {
  std::int64_t hops;
};
struct next_atom {};
}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto actors = p.get("actors");
  const auto hops = p.get("hops");
  const auto workers = static_cast<std::size_t>(p.get("workers"));
  troupe::actor_system sys{troupe::config{.workers = workers}};
  troupe::scoped_actor self{sys};
  const troupe::actor main = self.handle();
  std::vector<troupe::actor> ring;
  ring.reserve(static_cast<std::size_t>(actors));
  for (std::int64_t i = 0; i < actors; ++i)
    ring.push_back(sys.spawn([hops, main](troupe::event_actor& s) {
      auto next = std::make_shared<troupe::actor>();
      return troupe::behavior{
          [next](next_atom, troupe::actor a) { *next = std::move(a); },
          [&s, next, hops, main](token t) {
            if (++t.hops == hops) s.send(main, t.hops);
            else s.send(*next, t);
          },
      };
    }));
  for (std::size_t i = 0; i < ring.size(); ++i) self->send(ring[i], next_atom{}, ring[(i + 1) % ring.size()]);
  const double cpu0 = token_ring::process_cpu_s();
  stopwatch sw;
  self->send(ring[0], token{0});
  std::int64_t got = -1;
  self->receive([&](std::int64_t n) { got = n; });
  sample s;
  token_ring::finish(s, sw, cpu0, hops);
  check_eq("hops counted", hops, got);
  for (auto& a : ring) sys.send_exit(a, troupe::error{troupe::errc::user_shutdown, "done"});
  return s;
}
