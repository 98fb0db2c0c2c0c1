// memory_at_max_rate, CAF 0.17: the source sends chunks of 1000 tuples
// straight to the sink and re-triggers itself, with no flow control: the
// sink's mailbox holds whatever it has not handled yet. After each chunk the
// source looks at the clock (it stops after `seconds`) and at the process's
// RSS (it stops early at `rss_cap_mib`). Then it tells the sink how many it
// sent; per-sender order puts that message behind its last tuple.
#include "impls.hpp"

#include "common/caf_support.hpp"

using bench::memory_at_max_rate::tuple;
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(bench::memory_at_max_rate::tuple)

namespace {

using go_atom = caf::atom_constant<caf::atom("go")>;
using sent_atom = caf::atom_constant<caf::atom("sent")>;
using done_atom = caf::atom_constant<caf::atom("done")>;

struct source_state {
  std::int64_t next = 0;
  std::chrono::steady_clock::time_point t0;
};

caf::behavior source(caf::stateful_actor<source_state>* self, caf::actor sink, caf::actor main, double seconds,
                     double cap_mib) {
  return {[=](go_atom) {
    auto& st = self->state;
    if (st.next == 0) st.t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < 1000; ++k, ++st.next) self->send(sink, tuple{st.next % 1024, st.next, st.next});
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - st.t0).count();
    const bool capped = bench::memory_at_max_rate::rss_mib() >= cap_mib;
    if (elapsed < seconds && !capped) {
      self->send(self, go_atom::value);
      return;
    }
    self->send(sink, sent_atom::value, st.next);
    self->send(main, sent_atom::value, st.next, elapsed, capped);
    self->quit();
  }};
}

struct sink_state {
  bench::memory_at_max_rate::tally t;
};

caf::behavior sink(caf::stateful_actor<sink_state>* self, caf::actor main, std::int64_t spin) {
  return {[=](const tuple& x) { self->state.t.add(x, spin); },
          [=](sent_atom, std::int64_t) {
            // Every tuple of the source is ahead of this message.
            auto& t = self->state.t;
            self->send(main, done_atom::value, t.count, t.sum, t.work);
            self->quit();
          }};
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto seconds = p.get("seconds");
  const auto workers = p.get("workers");
  check(seconds > 5, "seconds must be more than 5 (RSS is sampled at 5 s)");
  caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  auto main_handle = caf::actor_cast<caf::actor>(self);
  auto snk = sys.spawn(sink, main_handle, p.get("sink_spin"));
  auto src =
      sys.spawn(source, snk, main_handle, static_cast<double>(seconds), static_cast<double>(p.get("rss_cap_mib")));
  std::int64_t sent = -1;
  double source_s = 0;
  bool capped = false;
  memory_at_max_rate::tally t;
  stopwatch sw;
  memory_at_max_rate::rss_sampler rss{static_cast<double>(seconds)};
  self->send(src, go_atom::value);
  // Two replies, in either order: the source's report and the sink's tally.
  for (int replies = 0; replies < 2; ++replies) {
    self->receive(
        [&](sent_atom, std::int64_t n, double el, bool cap) {
          sent = n;
          source_s = el;
          capped = cap;
        },
        [&](done_atom, std::int64_t c, std::int64_t s, double w) {
          t.count = c;
          t.sum = s;
          t.work = w;
        });
  }
  sample s;
  s.wall_s = sw.seconds();
  rss.stop();
  t.check(sent);
  rss.report(s);
  s.add("sink_tuples", static_cast<double>(t.count), "tuples", true);
  s.add("source_s", source_s, "s");
  s.add("capped", capped ? 1 : 0, "");
  return s;
}
