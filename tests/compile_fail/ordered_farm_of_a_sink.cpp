// expect: troupe::farm: an ordered farm's replicas must take and emit values
// expect: farm_check<troupe::stream::sink_node<
// An ordered farm of sinks: there is no output to keep in order.
#include <troupe/troupe.hpp>

#include <optional>

int main() {
  troupe::actor_system sys;
  auto numbers = troupe::stream::source([i = 0]() mutable -> std::optional<int> {
    if (i == 10) return std::nullopt;
    return i++;
  });
  auto g = troupe::spawn_pattern(sys, troupe::pipeline{numbers, troupe::farm{troupe::stream::sink([](int) {}), 2,
                                                                             troupe::round_robin{}, troupe::ordered}});
  g.wait();
}
