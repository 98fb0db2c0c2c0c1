// expect: troupe::farm: an ordered farm cannot broadcast
// expect: troupe::broadcast, true>
// An ordered broadcast farm: every replica would answer every input.
#include <troupe/troupe.hpp>

int main() {
  troupe::actor_system sys;
  auto p = troupe::spawn_pattern(
      sys, troupe::farm{troupe::seq{[](int x) { return x; }}, 2, troupe::broadcast{}, troupe::ordered});
  p.close();
}
