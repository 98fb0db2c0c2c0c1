// expect: troupe::farm: an ordered farm's replicas must emit each input's outputs while handling it
// expect: farm_check<batcher
// An ordered farm of a node that batches: it emits an input's outputs after
// it has handled that input, so the farm could not number them.
#include <troupe/troupe.hpp>

#include <optional>
#include <vector>

struct batcher : troupe::stream::node<int, int> {
  std::vector<int> held;
  void consume(int& x) { held.push_back(x); }
  void on_idle() {
    for (int v : held) send_next(v);
    held.clear();
  }
};

int main() {
  troupe::actor_system sys;
  auto src = troupe::stream::source([i = 0]() mutable -> std::optional<int> {
    if (i == 10) return std::nullopt;
    return i++;
  });
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{src, troupe::farm{batcher{}, 2, troupe::round_robin{}, troupe::ordered},
                            troupe::stream::sink([](int) {})});
  g.wait();
}
