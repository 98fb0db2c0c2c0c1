// expect: troupe::spawn_pattern: the pattern starts with a source and its last stage emits values that nothing receives
// expect: spawn_check<troupe::pipeline<troupe::stream::source_node<
// A source at the front and a map at the end: the map's outputs have no receiver.
#include <troupe/troupe.hpp>

#include <optional>

int main() {
  troupe::actor_system sys;
  auto numbers = troupe::stream::source([i = 0]() mutable -> std::optional<int> {
    if (i == 10) return std::nullopt;
    return i++;
  });
  auto g = troupe::spawn_pattern(sys, troupe::pipeline{numbers, troupe::stream::map([](int x) { return x * 2; })});
  g.wait();
}
