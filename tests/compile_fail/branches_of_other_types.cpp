// expect: troupe::branches: every branch must take and emit the same types as the first
// expect: branch_check<1, troupe::seq<
// Branch 1 emits std::string where branch 0 emits int.
#include <troupe/troupe.hpp>

#include <string>

int main() {
  troupe::actor_system sys;
  auto p = troupe::spawn_pattern(sys, troupe::branches{troupe::seq{[](int x) { return x; }},
                                                       troupe::seq{[](int x) { return std::to_string(x); }}});
  p.close();
}
