// ping_pong, troupe: two event actors; pong answers every ping to its sender,
// ping checks the sequence numbers and reports to the scoped main actor.
#include "impls.hpp"

#include <troupe/troupe.hpp>

namespace {
struct ping_msg {
  std::int64_t seq;
};
struct pong_msg {
  std::int64_t seq;
};
struct start_atom {};
}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto round_trips = p.get("round_trips");
  const auto workers = static_cast<std::size_t>(p.get("workers"));
  troupe::actor_system sys{troupe::config{.workers = workers}};
  troupe::scoped_actor self{sys};
  auto pong = sys.spawn([](troupe::event_actor& s) {
    return troupe::behavior{[&s](ping_msg m) { s.send(s.sender(), pong_msg{m.seq}); }};
  });
  auto ping = sys.spawn(
      [round_trips](troupe::event_actor& s, troupe::actor buddy, troupe::actor main) {
        return troupe::behavior{[&s, buddy](start_atom) { s.send(buddy, ping_msg{1}); },
                                [&s, buddy, main, round_trips, received = std::int64_t{0}](pong_msg m) mutable {
                                  if (m.seq != ++received) {
                                    s.send(main, received, m.seq);
                                    s.quit();
                                  } else if (m.seq < round_trips) {
                                    s.send(buddy, ping_msg{m.seq + 1});
                                  } else {
                                    s.send(main, received);
                                    s.quit();
                                  }
                                }};
      },
      pong, self.handle());
  stopwatch sw;
  self->send(ping, start_atom{});
  std::int64_t received = -1;
  std::string failure;
  self->receive([&](std::int64_t n) { received = n; },
                [&](std::int64_t expected, std::int64_t got) {
                  failure =
                      "pong out of order: expected seq " + std::to_string(expected) + ", got " + std::to_string(got);
                });
  sample s;
  s.wall_s = sw.seconds();
  check(failure.empty(), failure);
  check_eq("pongs received", round_trips, received);
  return s;
}
