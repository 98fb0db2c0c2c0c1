// The map accelerator: several actors send (function, data) requests to one
// accelerator actor, which maps them on a worker team of its own.
#include <troupe/troupe.hpp>

#include <cstdio>
#include <functional>
#include <numeric>
#include <vector>

int main() {
  troupe::actor_system sys;
  // [accelerator]
  // A team of 2 threads of its own; .placement = troupe::placement::own_thread("<2-3>") would pin it.
  auto acc = troupe::spawn_map_accelerator<int, long>(sys, {.workers = 2});

  troupe::scoped_actor self{sys};
  auto me = self.handle();
  for (int a = 1; a <= 10; ++a)  // ten actors, each with its own data and function
    sys.spawn([acc, me, a](troupe::event_actor& s) {
      std::vector<int> data(1000);
      std::iota(data.begin(), data.end(), 0);
      std::function<long(const int&)> times_a = [a](const int& x) { return long{x} * a; };
      s.request(acc, std::chrono::seconds{10}, std::move(times_a), std::move(data))
          .then([&s, me, a](std::vector<long>& out) { s.send(me, a, std::accumulate(out.begin(), out.end(), 0L)); });
    });
  // [/accelerator]
  bool ok = true;
  for (int i = 0; i < 10; ++i) self->receive([&](int a, long sum) { ok = ok && sum == 499'500L * a; });
  std::printf("10 concurrent maps on the accelerator: %s\n", ok ? "all correct" : "WRONG");
  return ok ? 0 : 1;
}
