// ping_pong: two actors bounce a message back and forth.
//
// params:
//   round_trips  number of ping -> pong -> ping round trips (1'000'000)
//   workers      scheduler worker threads (1 or 2)
// Measured region: from the first ping sent to the last pong received by the
// pinger. Figure: msgs_per_s = 2 * round_trips / wall_s (both directions).
// Check: the pinger receives exactly round_trips pongs, each carrying the
// sequence number of the ping it answers (1, 2, ..., round_trips).
// threads impl: two threads, two moodycamel SPSC queues, busy polling; with
// workers == 1 both sides run interleaved on one thread (same two queues).
#pragma once

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_caf(const params& p);
sample run_threads(const params& p);

}  // namespace bench
