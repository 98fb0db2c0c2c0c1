// random_choice.hpp: routing to a replica drawn at random.
//   troupe::farm{worker{}, 4, troupe::random_choice{}}
// Each upstream replica draws from its own generator (seeded once per
// replica from std::random_device). Like round robin, a full replica's
// element may go to the next one with room (any_replica).
// Cost: one minstd_rand step and a modulo per element.
#pragma once

#include <cstddef>
#include <random>

namespace troupe {

class random_choice {
 public:
  static constexpr bool any_replica = true;

  template <class T>
  std::size_t pick(const T&, std::size_t n) {
    if (!seeded_) {
      rng_.seed(std::random_device{}());
      seeded_ = true;
    }
    return static_cast<std::size_t>(rng_()) % n;
  }

 private:
  std::minstd_rand rng_;
  bool seeded_ = false;
};

}  // namespace troupe
