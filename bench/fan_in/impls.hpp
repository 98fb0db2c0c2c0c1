// fan_in: `senders` actors each send `per_sender` messages to one receiver.
//
// params:
//   senders      number of sending actors (2)
//   per_sender   messages per sender (2'000'000)
//   workers      scheduler worker threads (2)
// A message carries (sender index, sequence number 0 .. per_sender-1).
// Measured region: from telling the senders to start until the receiver has
// got every message. Figure: msgs_per_s = senders * per_sender / wall_s.
// Check: the receiver gets senders * per_sender messages and, per sender, the
// sequence numbers in order without gaps.
// threads impl: `senders` producer threads + 1 consumer thread over one
// moodycamel::ConcurrentQueue (producer tokens), busy polling consumer.
#pragma once

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_caf(const params& p);
sample run_threads(const params& p);

}  // namespace bench
