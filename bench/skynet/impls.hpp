// skynet: a 10-ary tree of actors down to `leaves` leaf actors (1'000'000
// leaves = depth 6). Every actor spawns its `arity` children; a leaf replies
// its ordinal (0 .. leaves-1) to its parent and terminates; an inner actor
// sums its children's replies, replies the sum to its parent and terminates.
//
// params:
//   leaves    number of leaf actors (1'000'000; must be a power of arity)
//   arity     children per inner actor (10)
//   workers   scheduler worker threads (1 or 2)
// Measured region: from spawning the root to the end of the actor system's
// teardown (system destructor returned), i.e. including teardown.
// Figure: wall_s. Peak RSS (from rusage) matters here.
// Check: the root's sum equals leaves * (leaves - 1) / 2 (499'999'500'000).
#pragma once

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_caf(const params& p);

}  // namespace bench
