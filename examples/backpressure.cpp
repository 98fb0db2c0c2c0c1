// backpressure: a fast producer and a consumer. send_if enqueues only while the
// consumer's mailbox holds fewer than `limit` messages; when it is full the
// producer comes back later instead of filling memory.
// [guide_1]
#include <troupe/troupe.hpp>
// [/guide_1]

#include <algorithm>
#include <atomic>
#include <iostream>

using namespace std::chrono_literals;
struct retry_atom {};

int main() {
  constexpr int items = 2000;
  constexpr std::size_t limit = 16;
  std::atomic<std::size_t> longest{0};  // the longest mailbox the consumer saw
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  auto consumer = sys.spawn([&longest, me](troupe::actor_ctx& c) {
    return troupe::behavior{[&c, &longest, me, sum = 0L, n = 0](int x) mutable {
      longest = std::max(longest.load(), c.mailbox_size());
      sum += x;
      if (++n == items) c.send(me, sum);
    }};
  });
  sys.spawn([consumer, me](troupe::actor_ctx& p) {
    p.send(p.self(), retry_atom{});
    // [send_if]
    return troupe::behavior{[&p, consumer, me, next = 1, waits = 0](retry_atom) mutable {
      while (next <= items && p.send_if(consumer, limit, next)) ++next;
      if (next <= items) {
        ++waits;
        p.delayed_send(p.self(), 100us, retry_atom{});  // full: try again later
      } else {
        p.send(me, waits);
        p.quit();
      }
    }};
    // [/send_if]
  });
  long sum = 0;
  int waits = 0;
  self->receive([&](long s) { sum = s; });
  self->receive([&](int w) { waits = w; });
  std::cout << "sum " << sum << ", longest mailbox " << longest << " (limit " << limit << "), producer waited " << waits
            << " times\n";
  return sum == long{items} * (items + 1) / 2 && longest <= limit ? 0 : 1;
}
