// pipeline3, CAF 0.17 experimental streams: a stream source, a stream stage
// (the forwarder) and a stream sink, wired up through actor composition
// (`sink * forwarder * source`, as in CAF's own streaming example). CAF moves
// the tuples in batches and meters them with its credit-based flow control;
// every batching/credit setting stays at CAF's default ("stream.*" options:
// desired-batch-complexity 50us, max-batch-delay 5ms, credit-round-interval
// 10ms in 0.17). CAF 0.17 sizes batches and credit by time, from the measured
// per-element cost: a batch is about 50us of work, a credit round about 10ms.
// Forwarding a tuple costs a few ns, so batches get large (tens of thousands
// of tuples) and the credit a consumer grants is in the millions of tuples:
// the in-flight data is bounded by time, not by a small count (measured: the
// source runs up to ~5M tuples ahead of the forwarder at 20M tuples, and peak
// RSS grows with `tuples`).
#include "impls.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "common/stream_caf.hpp"

using bench::pipeline3::tuple;
// Neither type has an inspect() overload, so both are allowed as "unsafe"
// (local only) message types. The std::vector<tuple> one is required: CAF ships
// every batch as a message holding a std::vector<tuple> (without it
// make_message's static_assert fires). The tuple one is not strictly needed
// here (tuples never travel alone) but keeps this translation unit's view of
// caf::allowed_unsafe_message_type<tuple> the same as caf.cpp's.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<bench::pipeline3::tuple>)

namespace {

using start_atom = caf::atom_constant<caf::atom("start")>;
using closed_atom = caf::atom_constant<caf::atom("closed")>;

/// On `start`, opens a stream of `tuples` tuples towards the next stage of
/// the composition the message went through.
caf::behavior source(caf::event_based_actor* self, std::int64_t tuples) {
  return {[=](start_atom) {
    return caf::attach_stream_source(
        self,
        // Initializer: the state is the index of the next tuple.
        [](std::int64_t& next) { next = 0; },
        // Generator: CAF asks for about `hint` elements (the credit it has).
        [tuples](std::int64_t& next, caf::downstream<tuple>& out, std::size_t hint) {
          const auto end = std::min(tuples, next + static_cast<std::int64_t>(hint));
          for (; next < end; ++next) out.push(tuple{next % 1024, next, next});
        },
        // Predicate: the stream ends after the last tuple.
        [tuples](const std::int64_t& next) { return next == tuples; });
  }};
}

/// Passes every tuple on unchanged.
caf::behavior forwarder(caf::event_based_actor* self) {
  return {[=](caf::stream<tuple> in) {
    return caf::attach_stream_stage(
        self, in, [](caf::unit_t&) {}, [](caf::unit_t&, caf::downstream<tuple>& out, tuple x) { out.push(x); });
  }};
}

struct sink_state {
  bench::pipeline3::tally t;
};

/// Tallies the tuples; reports `done` to `main` as soon as the last tuple is
/// in, and `closed` (with CAF's error text, empty when none) once the stream
/// has shut down.
caf::behavior sink(caf::event_based_actor* self, caf::actor main, std::int64_t tuples) {
  return {[=](caf::stream<tuple> in) {
    return caf::attach_stream_sink(
        self, in, [](sink_state&) {},
        [=](sink_state& st, tuple x) {
          st.t.add(x);
          if (st.t.count == tuples) bench::stream_caf::report(self, main, st.t);
        },
        [=](sink_state& st, const caf::error& err) {
          if (st.t.count != tuples) bench::stream_caf::report(self, main, st.t);  // main still waits for it
          self->send(main, closed_atom::value, err ? self->system().render(err) : std::string{});
        });
  }};
}

}  // namespace

bench::sample bench::run_caf_stream(const params& p) {
  const auto tuples = p.get("tuples");
  const auto workers = p.get("workers");
  bench::caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  bench::caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  auto snk = sys.spawn(sink, caf::actor_cast<caf::actor>(self), tuples);
  auto fwd = sys.spawn(forwarder);
  auto src = sys.spawn(source, tuples);
  // A message to the composition reaches `src`; the stream handshake that
  // src's handler answers with travels on to `fwd`, and fwd's to `snk`.
  auto pipeline = snk * fwd * src;
  bench::stopwatch sw;
  caf::anon_send(pipeline, start_atom::value);
  const auto t = stream_caf::await_report(self);
  sample s;
  s.wall_s = sw.seconds();
  t.check(tuples);
  std::string err;
  bool closed = false;
  self->receive(
      [&](closed_atom, const std::string& e) {
        closed = true;
        err = e;
      },
      caf::after(std::chrono::seconds(30)) >> [] {});
  check(closed, "the stream did not close within 30 s of the last tuple");
  check(err.empty(), "the stream closed with an error: " + err);
  return s;
}
