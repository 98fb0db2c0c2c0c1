// fan_in, CAF 0.17: sender actors emit their messages in slices of
// `slice` messages per activation (re-activating themselves with a `next`
// message) so they do not monopolise a worker; the receiver checks order.
#include "impls.hpp"

#include <vector>

#include "common/caf_support.hpp"

namespace {

using go_atom = caf::atom_constant<caf::atom("go")>;
using next_atom = caf::atom_constant<caf::atom("next")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using error_atom = caf::atom_constant<caf::atom("error")>;

constexpr std::int64_t slice = 1000;

struct sender_state {
  std::int64_t next_seq = 0;
};

caf::behavior sender(caf::stateful_actor<sender_state>* self, caf::actor sink, std::int32_t id, std::int64_t count) {
  return {
      [=](go_atom) { self->send(self, next_atom::value); },
      [=](next_atom) {
        auto& seq = self->state.next_seq;
        auto end = std::min(count, seq + slice);
        for (; seq < end; ++seq) self->send(sink, id, seq);
        if (seq < count) self->send(self, next_atom::value);
        else self->quit();
      },
  };
}

struct receiver_state {
  std::vector<std::int64_t> expected;  // next sequence number per sender
  std::int64_t received = 0;
  bool failed = false;
};

caf::behavior receiver(caf::stateful_actor<receiver_state>* self, std::int32_t senders, std::int64_t per_sender,
                       caf::actor main) {
  self->state.expected.assign(static_cast<size_t>(senders), 0);
  const auto total = senders * per_sender;
  return {
      [=](std::int32_t id, std::int64_t seq) {
        auto& st = self->state;
        if (id < 0 || id >= senders || st.expected[static_cast<size_t>(id)] != seq) {
          if (!st.failed) {
            st.failed = true;
            self->send(main, error_atom::value, id, seq);
          }
          return;
        }
        ++st.expected[static_cast<size_t>(id)];
        if (++st.received == total) {
          self->send(main, done_atom::value, st.received);
          self->quit();
        }
      },
  };
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto senders = static_cast<std::int32_t>(p.get("senders"));
  const auto per_sender = p.get("per_sender");
  const auto workers = p.get("workers");
  caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  auto sink = sys.spawn(receiver, senders, per_sender, caf::actor_cast<caf::actor>(self));
  std::vector<caf::actor> srcs;
  for (std::int32_t i = 0; i < senders; ++i) srcs.push_back(sys.spawn(sender, sink, i, per_sender));
  stopwatch sw;
  for (auto& s : srcs) self->send(s, go_atom::value);
  std::int64_t received = -1;
  std::string failure;
  self->receive([&](done_atom, std::int64_t n) { received = n; },
                [&](error_atom, std::int32_t id, std::int64_t seq) {
                  failure = "receiver got out-of-order or unknown message: sender " + std::to_string(id) + ", seq " +
                            std::to_string(seq);
                });
  sample s;
  s.wall_s = sw.seconds();
  if (!failure.empty()) {
    self->send_exit(sink, caf::exit_reason::user_shutdown);
    for (auto& x : srcs) self->send_exit(x, caf::exit_reason::user_shutdown);
  }
  check(failure.empty(), failure);
  check_eq("messages received", senders * per_sender, received);
  return s;
}
