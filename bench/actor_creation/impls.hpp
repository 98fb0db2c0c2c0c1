// actor_creation: fork/join over a binary tree of freshly spawned actors.
// Every actor above depth 0 spawns two children (depth - 1) and waits for
// their replies; a leaf (depth 0) replies 1; a parent replies the sum of its
// two children and terminates. The root has depth `depth`, so 2^(depth+1) - 1
// actors are created and the result is 2^depth.
//
// params:
//   depth     tree depth (20 -> 2'097'151 actors, result 1'048'576)
//   workers   scheduler worker threads (2)
// Measured region: from spawning the root until the main thread has the
// result. Figure: wall_s.
// Check: result == 2^depth.
#pragma once

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_caf(const params& p);

}  // namespace bench
