// Keyed windows: the average temperature of each sensor over its last 4
// readings, a new window every 2 readings; and actors around a graph: an
// actor feeds the graph's entry and another receives its results.
#include <troupe/troupe.hpp>

#include <cstdio>
#include <span>
#include <vector>

namespace st = troupe::stream;

struct reading {
  int sensor;
  double celsius;
};
using average = st::window_result<int, double>;

int main() {
  troupe::actor_system sys;
  troupe::scoped_actor self{sys};

  st::options o;
  o.results_to = self->self();  // the last stage emits: its outputs come here as messages
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{troupe::farm{st::count_window<reading>(&reading::sensor, 4, 2,
                                                              [](const int&, std::span<const reading> w) {
                                                                double sum = 0;
                                                                for (auto& r : w) sum += r.celsius;
                                                                return sum / static_cast<double>(w.size());
                                                              }),
                                    2, troupe::by_key{&reading::sensor}}},
      o);

  // Any actor can send elements to the graph; end_of_stream closes its input.
  sys.spawn([g](troupe::event_actor& me) {
    for (int i = 0; i < 8; ++i) {
      me.send(g, reading{1, 20.0 + i});
      me.send(g, reading{2, 30.0 - i});
    }
    me.send(g, st::end_of_stream{});
    me.quit();
    return troupe::behavior{};
  });
  g.wait();

  // Each sensor: windows [0,4) [2,6) [4,8) and, at the end, the partial [6,8).
  std::vector<average> got;
  for (int i = 0; i < 8; ++i) self->receive([&](average& a) { got.push_back(a); });
  bool ok = got.size() == 8;
  for (auto& a : got) {
    std::printf("sensor %d readings [%llu, %llu): %.2f\n", a.key, static_cast<unsigned long long>(a.start),
                static_cast<unsigned long long>(a.end), a.value);
    const double first = a.key == 1 ? 20.0 + static_cast<double>(a.start) : 30.0 - static_cast<double>(a.start);
    const double last = a.key == 1 ? 20.0 + static_cast<double>(a.end - 1) : 30.0 - static_cast<double>(a.end - 1);
    ok = ok && a.value == (first + last) / 2;
  }
  return ok ? 0 : 1;
}
