// self_send, troupe: each actor sends itself the next message; the
// messages-per-activation knob is config::throughput.
#include "impls.hpp"

#include <troupe/troupe.hpp>

namespace {
struct go_atom {};
}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto actors = p.get("actors");
  const auto per_actor = p.get("per_actor");
  const auto throughput = static_cast<std::size_t>(p.get("max_throughput"));
  const auto workers = static_cast<std::size_t>(p.get("workers"));
  troupe::actor_system sys{troupe::config{.workers = workers, .throughput = throughput}};
  troupe::scoped_actor self{sys};
  std::vector<troupe::actor> all;
  for (std::int64_t i = 0; i < actors; ++i)
    all.push_back(sys.spawn(
        [per_actor](troupe::event_actor& s, troupe::actor main) {
          return troupe::behavior{[&s](go_atom) { s.send(s.self(), std::int64_t{1}); },
                                  [&s, main, per_actor, handled = std::int64_t{0}](std::int64_t k) mutable {
                                    if (k != ++handled) {
                                      s.send(main, -handled);
                                      s.quit();
                                    } else if (k < per_actor) {
                                      s.send(s.self(), k + 1);
                                    } else {
                                      s.send(main, handled);
                                      s.quit();
                                    }
                                  }};
        },
        self.handle()));
  stopwatch sw;
  for (auto& a : all) self->send(a, go_atom{});
  std::int64_t complete = 0;
  for (std::int64_t i = 0; i < actors; ++i) self->receive([&](std::int64_t n) { complete += n == per_actor ? 1 : 0; });
  sample s;
  s.wall_s = sw.seconds();
  check_eq("actors that handled every message", actors, complete);
  return s;
}
