// fan_out, CAF 0.17: the topic is a local group; subscribers are spawned
// directly into it (spawn_in_group joins before the actor runs), the
// producer publishes slices of `slice` messages per activation.
#include "impls.hpp"

#include <vector>

#include "common/caf_support.hpp"

namespace {

using go_atom = caf::atom_constant<caf::atom("go")>;
using next_atom = caf::atom_constant<caf::atom("next")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using error_atom = caf::atom_constant<caf::atom("error")>;

constexpr std::int64_t slice = 100;

struct producer_state {
  std::int64_t next_seq = 0;
};

caf::behavior producer(caf::stateful_actor<producer_state>* self, caf::group topic, std::int64_t count) {
  return {
      [=](go_atom) { self->send(self, next_atom::value); },
      [=](next_atom) {
        auto& seq = self->state.next_seq;
        auto end = std::min(count, seq + slice);
        for (; seq < end; ++seq) self->send(topic, seq);
        if (seq < count) self->send(self, next_atom::value);
        else self->quit();
      },
  };
}

struct subscriber_state {
  std::int64_t received = 0;
};

caf::behavior subscriber(caf::stateful_actor<subscriber_state>* self, std::int64_t count, caf::actor main) {
  return {
      [=](std::int64_t seq) {
        auto& n = self->state.received;
        if (seq != n) {
          self->send(main, error_atom::value, n, seq);
          self->quit();
          return;
        }
        if (++n == count) {
          self->send(main, done_atom::value, n);
          self->quit();  // also leaves the group
        }
      },
  };
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto subscribers = p.get("subscribers");
  const auto messages = p.get("messages");
  const auto workers = p.get("workers");
  caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  auto topic = sys.groups().get_local("bench.fan_out");
  auto main = caf::actor_cast<caf::actor>(self);
  std::vector<caf::actor> subs;
  for (std::int64_t i = 0; i < subscribers; ++i) subs.push_back(sys.spawn_in_group(topic, subscriber, messages, main));
  auto prod = sys.spawn(producer, topic, messages);
  stopwatch sw;
  self->send(prod, go_atom::value);
  std::int64_t complete = 0;
  std::string failure;
  for (std::int64_t i = 0; i < subscribers && failure.empty(); ++i) {
    self->receive(
        [&](done_atom, std::int64_t n) {
          if (n == messages) ++complete;
        },
        [&](error_atom, std::int64_t expected, std::int64_t got) {
          failure = "subscriber expected seq " + std::to_string(expected) + ", got " + std::to_string(got);
        });
  }
  sample s;
  s.wall_s = sw.seconds();
  if (!failure.empty()) {
    // Remaining subscribers would wait forever; stop them before teardown.
    for (auto& x : subs) self->send_exit(x, caf::exit_reason::user_shutdown);
  }
  check(failure.empty(), failure);
  check_eq("subscribers that received every message", subscribers, complete);
  return s;
}
