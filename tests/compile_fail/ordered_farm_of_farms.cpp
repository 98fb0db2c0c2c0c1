// expect: troupe::farm: an ordered farm's replicas may not hold farms or branches
// expect: farm_check<troupe::farm<troupe::seq<
// An ordered farm whose replicas are farms: their outputs could not be put back in order.
#include <troupe/troupe.hpp>

int main() {
  troupe::actor_system sys;
  auto inner = troupe::farm{troupe::seq{[](int x) { return x + 1; }}, 2};
  auto p = troupe::spawn_pattern(sys, troupe::farm{inner, 2, troupe::round_robin{}, troupe::ordered});
  p.close();
}
