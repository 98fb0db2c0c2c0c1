// pipeline9: Source -> 7 Forwarders -> Sink (nine stages), 24-byte tuples at
// full speed: the cost of a hop, eight times over, with more stages than
// cores.
//
// params:
//   tuples    tuples the source emits (quick 5'000'000, full 20'000'000)
//   workers   scheduler threads of the actor implementations (2)
// impls:
//   troupe    troupe's typed streaming layer: nine nodes, eight channels of
//             1024 slots, every node on the actor system's 2 workers
//   caf       CAF 0.17 event-based actors, same structure; the source sends in
//             chunks of 1000 and re-triggers itself (unbounded mailboxes)
//   threads   nine threads (the sink is the calling thread), eight moodycamel
//             SPSC queues of 1024, busy polling with the bench's spin_wait
// Measured region: from the start signal until the sink has every tuple.
// Figure: tuples_per_s. Peak RSS matters (CAF's mailboxes are unbounded).
// Check: the sink counts `tuples` tuples whose values sum to
// tuples*(tuples-1)/2, in order.
#pragma once

#include <cstdint>

#include "common/harness.hpp"
#include "common/stream_tuple.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_caf(const params& p);
sample run_threads(const params& p);

namespace pipeline9 {

/// Forwarders between the source and the sink.
inline constexpr int forwarders = 7;

using stream_tuple::tally;
using stream_tuple::tuple;

}  // namespace pipeline9
}  // namespace bench
