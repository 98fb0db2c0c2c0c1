// prod_cons, CAF 0.17: the producer sends slices of `slice` int32 messages
// per activation (re-activating itself with a `next` message); the consumer
// counts and sums.
#include "impls.hpp"

#include "common/caf_support.hpp"

namespace {

using go_atom = caf::atom_constant<caf::atom("go")>;
using next_atom = caf::atom_constant<caf::atom("next")>;
using done_atom = caf::atom_constant<caf::atom("done")>;

constexpr std::int64_t slice = 1000;

struct producer_state {
  std::int64_t sent = 0;
};

caf::behavior producer(caf::stateful_actor<producer_state>* self, caf::actor sink, std::int64_t count) {
  return {
      [=](go_atom) { self->send(self, next_atom::value); },
      [=](next_atom) {
        auto& i = self->state.sent;
        auto end = std::min(count, i + slice);
        for (; i < end; ++i) self->send(sink, static_cast<std::int32_t>(i));
        if (i < count) self->send(self, next_atom::value);
        else self->quit();
      },
  };
}

struct consumer_state {
  std::int64_t received = 0;
  std::int64_t sum = 0;
};

caf::behavior consumer(caf::stateful_actor<consumer_state>* self, std::int64_t count, caf::actor main) {
  return {
      [=](std::int32_t x) {
        auto& st = self->state;
        st.sum += x;
        if (++st.received == count) {
          self->send(main, done_atom::value, st.received, st.sum);
          self->quit();
        }
      },
  };
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto messages = p.get("messages");
  const auto workers = p.get("workers");
  check(messages > 0 && messages <= (std::int64_t{1} << 31), "messages out of int32 range");
  caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  auto sink = sys.spawn(consumer, messages, caf::actor_cast<caf::actor>(self));
  auto src = sys.spawn(producer, sink, messages);
  std::int64_t received = -1;
  std::int64_t sum = -1;
  stopwatch sw;
  self->send(src, go_atom::value);
  self->receive([&](done_atom, std::int64_t n, std::int64_t s) {
    received = n;
    sum = s;
  });
  sample s;
  s.wall_s = sw.seconds();
  check_eq("messages received", messages, received);
  check_eq("sum of received values", messages * (messages - 1) / 2, sum);
  return s;
}
