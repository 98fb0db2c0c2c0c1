// round_robin.hpp: a farm's default routing: replicas in turn.
//   troupe::farm{worker{}, 4}                          // round robin
//   troupe::farm{worker{}, 4, troupe::round_robin{}}   // the same, spelled out
// Each upstream replica keeps its own turn (no shared counter). When the
// replica whose turn it is has a full channel, the next ones in turn may
// take the element (any_replica), so one slow replica does not stall the
// farm while others have room.
// Cost: an increment and a compare per element.
#pragma once

#include <cstddef>

namespace troupe {

class round_robin {
 public:
  /// A full replica's element may go to the next one with room.
  static constexpr bool any_replica = true;

  template <class T>
  std::size_t pick(const T&, std::size_t n) noexcept {
    const std::size_t i = next_ < n ? next_ : 0;
    next_ = i + 1 == n ? 0 : i + 1;
    return i;
  }

 private:
  std::size_t next_ = 0;
};

}  // namespace troupe
