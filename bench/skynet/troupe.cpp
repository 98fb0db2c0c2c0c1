// skynet, troupe: one event actor per tree node; children reply to their parent.
#include "impls.hpp"

#include <troupe/troupe.hpp>

namespace {

void skynet(troupe::event_actor& self, troupe::actor parent, std::int64_t num, std::int64_t size, std::int64_t arity) {
  if (size == 1) {
    self.send(parent, num);
    self.quit();
    return;
  }
  const auto sub = size / arity;
  for (std::int64_t i = 0; i < arity; ++i) self.spawn(skynet, self.self(), num + i * sub, sub, arity);
  self.become(troupe::behavior{[&self, parent, left = arity, sum = std::int64_t{0}](std::int64_t v) mutable {
    sum += v;
    if (--left == 0) {
      self.send(parent, sum);
      self.quit();
    }
  }});
}

}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto leaves = p.get("leaves");
  const auto arity = p.get("arity");
  const auto workers = static_cast<std::size_t>(p.get("workers"));
  std::int64_t result = -1;
  stopwatch sw;
  {
    troupe::actor_system sys{troupe::config{.workers = workers}};
    troupe::scoped_actor self{sys};
    sys.spawn(skynet, self.handle(), std::int64_t{0}, leaves, arity);
    self->receive([&](std::int64_t v) { result = v; });
  }
  sample s;
  s.wall_s = sw.seconds();
  check_eq("skynet sum", leaves * (leaves - 1) / 2, result);
  return s;
}
