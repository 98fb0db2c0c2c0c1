// self_send: `actors` actors each send themselves `per_actor` messages, one
// after the other (handling message k sends message k+1 to itself), so the
// scheduler's messages-per-activation knob decides how often an actor gives
// its worker back.
//
// params:
//   actors          number of actors (50)
//   per_actor       messages each actor sends itself (quick 200'000, full 1'000'000)
//   max_throughput  messages an actor may handle per activation before it
//                   yields (1, 4, 100); CAF: scheduler.max-throughput
//   workers         scheduler worker threads (2)
// Measured region: from kicking off all actors until all have reported.
// Figure: msgs_per_s = actors * per_actor / wall_s.
// Check: every actor handled exactly per_actor messages (1 .. per_actor).
#pragma once

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_caf(const params& p);

}  // namespace bench
