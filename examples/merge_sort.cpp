// Divide & conquer: a parallel merge sort over spans, in place.
#include <troupe/troupe.hpp>

#include <algorithm>
#include <cstdio>
#include <random>
#include <span>
#include <vector>

int main() {
  troupe::actor_system sys;
  std::vector<int> v(1'000'000);
  std::mt19937 rng{42};
  for (auto& x : v) x = static_cast<int>(rng());

  using range = std::span<int>;
  troupe::divide_and_conquer(
      sys, range{v},
      troupe::dac{
          .is_base = [](const range& r) { return r.size() <= 65'536; },
          .solve =
              [](range r) {
                std::sort(r.begin(), r.end());
                return r;
              },
          .divide = [](range r) { return std::vector<range>{r.subspan(0, r.size() / 2), r.subspan(r.size() / 2)}; },
          .combine =
              [](range r, std::vector<range> parts) {
                std::inplace_merge(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(parts[0].size()), r.end());
                return r;
              }});

  bool ok = std::is_sorted(v.begin(), v.end());
  std::printf("sorted %zu ints: %s\n", v.size(), ok ? "yes" : "NO");
  return ok ? 0 : 1;
}
