// actor_creation, troupe: fork/join over a binary tree of fresh actors.
#include "impls.hpp"

#include <troupe/troupe.hpp>

namespace {

void node(troupe::event_actor& self, troupe::actor parent, std::int64_t depth) {
  if (depth == 0) {
    self.send(parent, std::int64_t{1});
    self.quit();
    return;
  }
  self.spawn(node, self.self(), depth - 1);
  self.spawn(node, self.self(), depth - 1);
  self.become(troupe::behavior{[&self, parent, left = 2, sum = std::int64_t{0}](std::int64_t v) mutable {
    sum += v;
    if (--left == 0) {
      self.send(parent, sum);
      self.quit();
    }
  }});
}

}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto depth = p.get("depth");
  const auto workers = static_cast<std::size_t>(p.get("workers"));
  troupe::actor_system sys{troupe::config{.workers = workers}};
  troupe::scoped_actor self{sys};
  stopwatch sw;
  sys.spawn(node, self.handle(), depth);
  std::int64_t result = -1;
  self->receive([&](std::int64_t v) { result = v; });
  sample s;
  s.wall_s = sw.seconds();
  check_eq("fork/join result", std::int64_t{1} << depth, result);
  return s;
}
