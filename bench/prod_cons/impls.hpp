// prod_cons: one producer actor sends `messages` 4-byte messages (int32
// values 0, 1, 2, ...) to one consumer actor.
//
// params:
//   messages   number of int32 messages (20'000'000, quick and full)
//   workers    scheduler worker threads (2)
// Measured region: from telling the producer to start until the consumer has
// received the last message. Figure: ns_per_msg = wall_s * 1e9 / messages.
// Check: the consumer counts `messages` messages whose values sum to
// messages * (messages - 1) / 2.
// threads impl: a raw moodycamel SPSC ReaderWriterQueue<int32_t> between a
// producer thread and a busy-polling consumer thread.
#pragma once

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_caf(const params& p);
sample run_threads(const params& p);

}  // namespace bench
