// fan_out, troupe: a producer publishes to a group; every subscriber counts
// and checks order, then reports to the main actor.
#include "impls.hpp"

#include <troupe/troupe.hpp>

namespace {
struct joined_atom {};
struct go_atom {};
struct item {
  std::int64_t seq;
};
}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto subscribers = p.get("subscribers");
  const auto messages = p.get("messages");
  const auto workers = static_cast<std::size_t>(p.get("workers"));
  troupe::actor_system sys{troupe::config{.workers = workers}};
  troupe::scoped_actor self{sys};
  auto topic = sys.groups().get("fan_out");
  for (std::int64_t i = 0; i < subscribers; ++i)
    sys.spawn(
        [messages, topic](troupe::event_actor& s, troupe::actor main) {
          s.join(topic);
          s.send(main, joined_atom{});
          return troupe::behavior{[&s, main, messages, next = std::int64_t{0}, bad = std::int64_t{0}](item m) mutable {
            if (m.seq != next) ++bad;
            next = m.seq + 1;
            if (next == messages) {
              s.send(main, next, bad);
              s.quit();
            }
          }};
        },
        self.handle());
  for (std::int64_t i = 0; i < subscribers; ++i) self->receive([](joined_atom) {});
  auto producer = sys.spawn([messages, topic](troupe::event_actor& s) {
    return troupe::behavior{[&s, messages, topic, seq = std::int64_t{0}](go_atom) mutable {
      // chunks of 100 publications, then give the worker back
      for (int k = 0; k < 100 && seq < messages; ++k) s.send(topic, item{seq++});
      if (seq < messages) s.send(s.self(), go_atom{});
      else s.quit();
    }};
  });
  stopwatch sw;
  self->send(producer, go_atom{});
  std::int64_t complete = 0, bad = 0;
  for (std::int64_t i = 0; i < subscribers; ++i)
    self->receive([&](std::int64_t n, std::int64_t b) {
      complete += n == messages ? 1 : 0;
      bad += b;
    });
  sample s;
  s.wall_s = sw.seconds();
  check_eq("subscribers with every message", subscribers, complete);
  check_eq("out-of-order deliveries", 0, bad);
  return s;
}
