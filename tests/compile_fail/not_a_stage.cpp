// expect: troupe::pipeline: this stage is neither a stream node
// expect: pipeline_stage<1,
// expect: lambda
// A bare lambda as stage 1: it must be wrapped (troupe::seq{f}).
#include <troupe/troupe.hpp>

#include <optional>

int main() {
  troupe::actor_system sys;
  auto numbers = troupe::stream::source([i = 0]() mutable -> std::optional<int> {
    if (i == 10) return std::nullopt;
    return i++;
  });
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{numbers, [](int x) { return x * 2; }, troupe::stream::sink([](int) {})});
  g.wait();
}
