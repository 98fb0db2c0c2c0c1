// apps_max_rate: the streaming applications of apps/ at their maximum rate.
// Each application runs with one replica per operator; its source replays
// the in-memory input cyclically at full speed for `seconds`, held back only
// by backpressure; then the run ends when the sink has drained.
//
// params:
//   app       0 = wc (Word Count: source -> splitter -> counter -> sink, the
//             input apps/data/book.dat), 1 = fd (Fraud Detection: source ->
//             predictor -> sink, 800,000 generated transactions and the model
//             apps/data/fd_model.txt)
//   seconds   how long the source emits (quick 5, full 10)
//   workers   scheduler threads (2)
// impls:
//   troupe   troupe_apps::wc::run / troupe_apps::fd::run (the applications
//            themselves: troupe's typed streaming layer, channels of 1024
//            slots, every node on the actor system's pool; every sink tuple's
//            latency is measured)
//   caf      CAF 0.17 event-based actors, one per operator, the same operator
//            code. The source sends slices of at most 100 tuples per
//            activation and re-triggers itself with a message; before each
//            tuple it reads the first operator's mailbox length and, at 1024
//            or more, ends the activation without sending (the AGERE paper's
//            send_next_if experiment). The length is a counter kept next to
//            the mailbox (see caf.cpp for why not CAF's own mailbox().size()).
//            The other actors' mailboxes are unbounded as in plain CAF.
// Measured region: from the start of the graph until the sink has drained
// (troupe: run_result::elapsed_s; caf: the same span by bench::stopwatch).
// Loading and parsing the input is not in it.
// Figure: sink_tuples_per_s (an extra figure, also the primary metric).
// Extras: source_tuples_per_s, sink_tuples_per_s, latency_p50_us,
// latency_p95_us (source stamp to sink, every sink tuple), sink_tuples,
// drain_s (elapsed_s - seconds: how long the graph ran on after the source
// stopped, i.e. how far behind the sink was).
// Peak RSS comes from the harness.
// Check: the sink got tuples; wc: the sink's count equals the number of words
// the splitter produced (troupe: the sum of the counter's final counts); fd:
// the sink's count is at most the source's.
#pragma once

#include <cstdint>
#include <string>

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_caf(const params& p);

namespace apps_max_rate {

inline constexpr std::int64_t app_wc = 0;
inline constexpr std::int64_t app_fd = 1;

inline std::string app_name(std::int64_t app) {
  if (app == app_wc) return "wc";
  if (app == app_fd) return "fd";
  throw std::runtime_error("apps_max_rate: unknown app " + std::to_string(app));
}

inline std::string wc_input() { return TROUPE_APPS_DATA "/book.dat"; }
inline std::string fd_model() { return TROUPE_APPS_DATA "/fd_model.txt"; }

/// What both implementations measured; reported and checked the same way.
struct outcome {
  std::int64_t app = 0;
  double seconds = 0;  // how long the source was asked to emit
  double elapsed_s = 0;
  std::uint64_t source_tuples = 0;
  std::uint64_t sink_tuples = 0;
  std::uint64_t words = 0;  // wc: words the splitter produced
  double p50_us = 0, p95_us = 0;

  void check() const {
    bench::check(sink_tuples > 0, "the sink got no tuple");
    bench::check(source_tuples > 0, "the source sent nothing");
    if (app == app_wc) {
      check_eq("wc: tuples at the sink (words the splitter produced)", static_cast<std::int64_t>(words),
               static_cast<std::int64_t>(sink_tuples));
    } else {
      bench::check(sink_tuples <= source_tuples,
                   "fd: more tuples at the sink (" + std::to_string(sink_tuples) + ") than the source sent (" +
                       std::to_string(source_tuples) + ")");
    }
  }

  sample report() const {
    sample s;
    s.wall_s = elapsed_s;
    const double src = elapsed_s > 0 ? static_cast<double>(source_tuples) / elapsed_s : 0;
    const double snk = elapsed_s > 0 ? static_cast<double>(sink_tuples) / elapsed_s : 0;
    s.add("source_tuples_per_s", src, "tuples/s", true);
    s.add("sink_tuples_per_s", snk, "tuples/s", true);
    s.add("latency_p50_us", p50_us, "us");
    s.add("latency_p95_us", p95_us, "us");
    s.add("sink_tuples", static_cast<double>(sink_tuples), "tuples", true);
    s.add("drain_s", elapsed_s - seconds, "s");
    return s;
  }
};

}  // namespace apps_max_rate
}  // namespace bench
