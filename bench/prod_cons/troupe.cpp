// prod_cons, troupe: a producer actor sends int32 messages to a consumer
// actor; it sends in chunks of 1000 and re-triggers itself between chunks.
#include "impls.hpp"

#include <troupe/troupe.hpp>

namespace {
struct go_atom {};
}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto messages = p.get("messages");
  const auto workers = static_cast<std::size_t>(p.get("workers"));
  troupe::actor_system sys{troupe::config{.workers = workers}};
  troupe::scoped_actor self{sys};
  auto consumer = sys.spawn(
      [messages](troupe::event_actor& s, troupe::actor main) {
        return troupe::behavior{
            [&s, main, messages, count = std::int64_t{0}, sum = std::int64_t{0}](std::int32_t v) mutable {
              sum += v;
              if (++count == messages) {
                s.send(main, count, sum);
                s.quit();
              }
            }};
      },
      self.handle());
  auto producer = sys.spawn(
      [messages](troupe::event_actor& s, troupe::actor dest) {
        return troupe::behavior{[&s, dest, messages, next = std::int64_t{0}](go_atom) mutable {
          for (int k = 0; k < 1000 && next < messages; ++k) s.send(dest, static_cast<std::int32_t>(next++));
          if (next < messages) s.send(s.self(), go_atom{});
          else s.quit();
        }};
      },
      consumer);
  stopwatch sw;
  self->send(producer, go_atom{});
  std::int64_t count = -1, sum = -1;
  self->receive([&](std::int64_t c, std::int64_t su) {
    count = c;
    sum = su;
  });
  sample s;
  s.wall_s = sw.seconds();
  check_eq("messages received", messages, count);
  check_eq("sum of values", messages * (messages - 1) / 2, sum);
  return s;
}
