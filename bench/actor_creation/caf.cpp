// actor_creation, CAF 0.17: fork/join with function-based stateful actors;
// children send their result to the parent handle they were spawned with.
#include "impls.hpp"

#include "common/caf_support.hpp"

namespace {

struct fork_state {
  std::int64_t sum = 0;
  int pending = 2;
};

caf::behavior fork_node(caf::stateful_actor<fork_state>* self, caf::actor parent, std::int32_t depth) {
  if (depth == 0) {
    self->send(parent, std::int64_t{1});
    return {};  // leaf: no behavior, the actor terminates
  }
  auto me = caf::actor_cast<caf::actor>(self);
  self->spawn(fork_node, me, depth - 1);
  self->spawn(fork_node, me, depth - 1);
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
  const auto depth = p.get("depth");
  const auto workers = p.get("workers");
  check(depth >= 0 && depth < 40, "depth out of range");
  caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  std::int64_t result = -1;
  stopwatch sw;
  sys.spawn(fork_node, caf::actor_cast<caf::actor>(self), static_cast<std::int32_t>(depth));
  self->receive([&](std::int64_t x) { result = x; });
  sample s;
  s.wall_s = sw.seconds();
  check_eq("fork/join result", std::int64_t{1} << depth, result);
  return s;
}
