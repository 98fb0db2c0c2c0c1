// expect: troupe::farm: the policy cannot route the farm's input type
// expect: troupe::by_key<
// A by_key whose key function takes another type than the farm's input.
#include <troupe/troupe.hpp>

#include <string>

int main() {
  troupe::actor_system sys;
  auto p = troupe::spawn_pattern(sys, troupe::farm{troupe::seq{[](int x) { return x; }}, 2,
                                                   troupe::by_key{[](const std::string& s) { return s.size(); }}});
  p.close();
}
