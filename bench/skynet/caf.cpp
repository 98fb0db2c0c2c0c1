// skynet, CAF 0.17: function-based stateful actors; leaves send their ordinal
// to the parent and terminate by returning an empty behavior.
#include "impls.hpp"

#include <memory>

#include "common/caf_support.hpp"

namespace {

struct node_state {
  std::int64_t sum = 0;
  std::int64_t pending = 0;
};

caf::behavior node(caf::stateful_actor<node_state>* self, caf::actor parent, std::int64_t ordinal, std::int64_t size,
                   std::int64_t arity) {
  if (size == 1) {
    self->send(parent, ordinal);
    return {};  // no behavior: the actor terminates
  }
  const auto child_size = size / arity;
  auto me = caf::actor_cast<caf::actor>(self);
  for (std::int64_t i = 0; i < arity; ++i) self->spawn(node, me, ordinal + i * child_size, child_size, arity);
  self->state.pending = arity;
  return {
      [=](std::int64_t x) {
        self->state.sum += x;
        if (--self->state.pending == 0) {
          self->send(parent, self->state.sum);
          self->quit();
        }
      },
  };
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto leaves = p.get("leaves");
  const auto arity = p.get("arity");
  const auto workers = p.get("workers");
  check(arity >= 2, "arity must be >= 2");
  {
    std::int64_t n = 1;
    while (n < leaves) n *= arity;
    check(n == leaves, "leaves must be a power of arity");
  }
  caf_support::config cfg{workers};
  auto sys = std::make_unique<caf::actor_system>(cfg);
  caf_support::check_workers(*sys, workers);
  std::int64_t result = -1;
  stopwatch sw;
  {
    caf::scoped_actor self{*sys};
    self->spawn(node, caf::actor_cast<caf::actor>(self), std::int64_t{0}, leaves, arity);
    self->receive([&](std::int64_t sum) { result = sum; });
  }
  sys.reset();  // teardown: waits for all actors, stops the scheduler
  sample s;
  s.wall_s = sw.seconds();
  check_eq("skynet sum", leaves * (leaves - 1) / 2, result);
  return s;
}
