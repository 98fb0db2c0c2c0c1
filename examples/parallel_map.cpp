// Map: apply a function to every element in parallel, static and dynamic partitioning.
#include <troupe/troupe.hpp>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

int main() {
  troupe::actor_system sys;
  std::vector<int> in(100'000);
  std::iota(in.begin(), in.end(), 0);
  auto f = [](int x) { return std::sqrt(static_cast<double>(x)); };

  auto a = troupe::map(sys, in, f, troupe::partition::fixed());       // one slice per worker
  auto b = troupe::map(sys, in, f, troupe::partition::dynamic(512));  // chunks on demand

  bool ok = a == b && a.size() == in.size() && a[99'999] == std::sqrt(99'999.0);
  std::printf("mapped %zu elements: %s\n", a.size(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
