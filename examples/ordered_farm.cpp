// An order-preserving farm: results leave in input order although the
// replicas finish in any order; the results of plain sends go to their sender.
#include <troupe/troupe.hpp>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

int main() {
  troupe::actor_system sys;
  troupe::scoped_actor self{sys};
  // [ordered]
  auto slow_square = troupe::seq{[](int x) {
    std::this_thread::sleep_for(std::chrono::microseconds((x * 37) % 200));  // uneven work
    return x * x;
  }};
  auto p = troupe::spawn_pattern(sys, troupe::farm{slow_square, 4, troupe::round_robin{}, troupe::ordered});
  for (int i = 0; i < 100; ++i) self->send(p, i);  // plain sends: the results come back here
  std::vector<int> results;
  for (int i = 0; i < 100; ++i) self->receive([&](int v) { results.push_back(v); });  // 0, 1, 4, 9, ...
  // [/ordered]
  bool in_order = true;
  for (int i = 0; i < 100; ++i) in_order = in_order && results[i] == i * i;
  std::printf("100 results in input order: %s\n", in_order ? "yes" : "NO");
  return in_order ? 0 : 1;
}
