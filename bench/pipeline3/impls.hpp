// pipeline3 (AGERE 2020 paper, Fig. 4 set-up): Source -> Forwarder -> Sink,
// 24-byte tuples at full speed.
//
// params:
//   tuples    tuples the source emits (quick 5'000'000, full 20'000'000)
//   workers   scheduler threads of the actor implementations (2)
// impls:
//   troupe         troupe's typed streaming layer: three nodes, channels of
//                  1024 slots, nodes on the actor system's 2 workers
//   troupe_threads the same graph with each node on its own thread
//   troupe_chain   the forwarder chained to the source (troupe::chain: direct
//                  calls), one channel to the sink
//   troupe_fused   all three nodes in one chain: no channel (the floor of
//                  the nodes' own work on one core)
//   troupe_actors  troupe event actors; the source sends in chunks of 1000 and
//                  re-triggers itself (overload control bounds the mailboxes)
//   caf            CAF 0.17 event-based actors, same structure (unbounded mailboxes)
//   caf_credit     CAF 0.17 actors with credits: the source keeps at most
//                  `credit` tuples in flight; the sink acknowledges every `ack` tuples
//   caf_stream     CAF 0.17's experimental streams (source, stage, sink with
//                  CAF's credit-based flow control)
//   threads        three threads, two moodycamel SPSC queues of 1024, busy polling
// Measured region: from the start signal until the sink has every tuple.
// Figure: tuples_per_s. Peak RSS matters (CAF's mailboxes are unbounded).
// Check: the sink counts `tuples` tuples whose values sum to tuples*(tuples-1)/2,
// in order.
#pragma once

#include <cstdint>

#include "common/harness.hpp"
#include "common/stream_tuple.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_troupe_threads(const params& p);
sample run_troupe_chain(const params& p);
sample run_troupe_fused(const params& p);
sample run_troupe_actors(const params& p);
sample run_caf(const params& p);
sample run_caf_credit(const params& p);
sample run_caf_stream(const params& p);
sample run_threads(const params& p);

namespace pipeline3 {

using stream_tuple::tally;
using stream_tuple::tuple;

}  // namespace pipeline3
}  // namespace bench
