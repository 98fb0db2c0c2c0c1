// fan_in, troupe: `senders` event actors send to one receiver; each sender
// sends in chunks of 1000 and re-triggers itself, so it gives its worker back.
#include "impls.hpp"

#include <troupe/troupe.hpp>

#include <vector>

namespace {
struct seq_msg {
  std::int32_t sender;
  std::int64_t seq;
};
struct go_atom {};
}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto senders = p.get("senders");
  const auto per_sender = p.get("per_sender");
  const auto workers = static_cast<std::size_t>(p.get("workers"));
  troupe::actor_system sys{troupe::config{.workers = workers}};
  troupe::scoped_actor self{sys};
  const auto total = senders * per_sender;
  auto receiver = sys.spawn(
      [total](troupe::event_actor& s, troupe::actor main, std::int64_t n) {
        return troupe::behavior{[&s, main, total, next = std::vector<std::int64_t>(static_cast<std::size_t>(n), 0),
                                 got = std::int64_t{0}, bad = std::int64_t{0}](seq_msg m) mutable {
          auto& expected = next[static_cast<std::size_t>(m.sender)];
          if (m.seq != expected) ++bad;
          expected = m.seq + 1;
          if (++got == total) {
            s.send(main, got, bad);
            s.quit();
          }
        }};
      },
      self.handle(), senders);
  std::vector<troupe::actor> sender_actors;
  for (std::int64_t i = 0; i < senders; ++i)
    sender_actors.push_back(sys.spawn(
        [per_sender](troupe::event_actor& s, troupe::actor dest, std::int32_t id) {
          return troupe::behavior{[&s, dest, id, per_sender, seq = std::int64_t{0}](go_atom) mutable {
            for (int k = 0; k < 1000 && seq < per_sender; ++k) s.send(dest, seq_msg{id, seq++});
            if (seq < per_sender) s.send(s.self(), go_atom{});
            else s.quit();
          }};
        },
        receiver, static_cast<std::int32_t>(i)));
  stopwatch sw;
  for (auto& a : sender_actors) self->send(a, go_atom{});
  std::int64_t got = -1, bad = -1;
  self->receive([&](std::int64_t g, std::int64_t b) {
    got = g;
    bad = b;
  });
  sample s;
  s.wall_s = sw.seconds();
  check_eq("messages received", total, got);
  check_eq("out-of-order messages", 0, bad);
  return s;
}
