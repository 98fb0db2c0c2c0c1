// self_send, CAF 0.17: each actor handles `k` by sending itself `k + 1`;
// scheduler.max-throughput is the messages-per-activation knob.
#include "impls.hpp"

#include <vector>

#include "common/caf_support.hpp"

namespace {

using go_atom = caf::atom_constant<caf::atom("go")>;
using done_atom = caf::atom_constant<caf::atom("done")>;

struct looper_state {
  std::int64_t handled = 0;
};

caf::behavior looper(caf::stateful_actor<looper_state>* self, std::int64_t count, caf::actor main) {
  return {
      [=](go_atom) { self->send(self, std::int64_t{1}); },
      [=](std::int64_t k) {
        ++self->state.handled;
        if (k < count) {
          self->send(self, k + 1);
        } else {
          self->send(main, done_atom::value, self->state.handled, k);
          self->quit();
        }
      },
  };
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto actors = p.get("actors");
  const auto per_actor = p.get("per_actor");
  const auto throughput = p.get("max_throughput");
  const auto workers = p.get("workers");
  caf_support::config cfg{workers, throughput};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  check_eq("CAF scheduler.max-throughput", throughput,
           static_cast<std::int64_t>(caf::get_or(sys.config(), "scheduler.max-throughput", size_t{0})));
  caf::scoped_actor self{sys};
  auto main = caf::actor_cast<caf::actor>(self);
  std::vector<caf::actor> loopers;
  for (std::int64_t i = 0; i < actors; ++i) loopers.push_back(sys.spawn(looper, per_actor, main));
  stopwatch sw;
  for (auto& a : loopers) self->send(a, go_atom::value);
  std::int64_t complete = 0;
  std::string failure;
  for (std::int64_t i = 0; i < actors; ++i) {
    self->receive([&](done_atom, std::int64_t handled, std::int64_t last) {
      if (handled == per_actor && last == per_actor) ++complete;
      else if (failure.empty())
        failure = "an actor handled " + std::to_string(handled) + " messages, last " + std::to_string(last);
    });
  }
  sample s;
  s.wall_s = sw.seconds();
  check(failure.empty(), failure);
  check_eq("actors that handled all their messages", actors, complete);
  return s;
}
