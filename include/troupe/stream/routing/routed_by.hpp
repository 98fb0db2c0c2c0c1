// routed_by.hpp: routing by a user function (const T&, replicas) -> replica.
//   troupe::farm{w{}, 4, [](const order& o, std::size_t n) { return o.region % n; }}
// A farm wraps a plain callable in routed_by; a class with its own
// pick(const T&, std::size_t n) member is a policy as it stands. The result
// is taken modulo the replica count.
// Cost: the function (inlined where the compiler sees it) per element.
#pragma once

#include <cstddef>
#include <utility>

namespace troupe {

template <class F>
class routed_by {
 public:
  explicit routed_by(F f) : f_{std::move(f)} {}

  template <class T>
  std::size_t pick(const T& v, std::size_t n) {
    return static_cast<std::size_t>(f_(v, n)) % n;
  }

 private:
  F f_;
};

}  // namespace troupe
