// broadcast.hpp: routing a copy of every element to every replica.
//   troupe::farm{model{}, 3, troupe::broadcast{}}
// For stages that must all see everything (models updated in parallel,
// replicated state). To send only some elements to every replica (markers,
// watermarks), keep another policy and call send_all(v) in the producer.
// Cost: one copy of the element per replica but the last, which gets it moved.
#pragma once

namespace troupe {

struct broadcast {
  static constexpr bool to_every_replica = true;
};

}  // namespace troupe
