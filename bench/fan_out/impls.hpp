// fan_out: one producer publishes `messages` messages to a topic with
// `subscribers` subscribers (CAF: a local group); every subscriber receives
// every message.
//
// params:
//   subscribers  number of subscribing actors (100)
//   messages     messages published by the producer (100'000)
//   workers      scheduler worker threads (2)
// A message carries its sequence number 0 .. messages-1.
// Measured region: from telling the producer to start until every subscriber
// has reported that it received all messages.
// Figure: deliveries_per_s = subscribers * messages / wall_s.
// Check: every subscriber counts exactly `messages` messages, in order.
#pragma once

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_caf(const params& p);

}  // namespace bench
