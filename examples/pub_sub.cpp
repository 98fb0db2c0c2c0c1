// pub_sub: a named group; every subscriber gets its own copy of each message,
// and subscribers leave the group when they end.
#include <troupe/troupe.hpp>

#include <iostream>
#include <string>

struct tick {
  std::string symbol;
  double price;
};

int main() {
  constexpr int subscribers = 3, ticks = 4;
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto prices = sys.groups().get("prices");
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  for (int i = 0; i < subscribers; ++i) {
    // [group]
    auto sub = sys.spawn([prices, me](troupe::actor_ctx& s) {
      s.join(prices);
      s.send(me, troupe::ok_atom{});  // subscribed
      return troupe::behavior{[&s, me, n = 0, sum = 0.0](const tick& t) mutable {
        sum += t.price;
        if (++n == ticks) {
          s.send(me, sum);
          s.quit();  // leaves the group on the way out
        }
      }};
    });
    // [/group]
    self->monitor(sub);
  }
  for (int i = 0; i < subscribers; ++i) self->receive([](troupe::ok_atom) {});
  // [guide_10]
  for (int i = 1; i <= ticks; ++i) self->send(prices, tick{"ACME", 10.0 * i});  // one copy per subscriber
  // [/guide_10]
  int right = 0, ended = 0;
  // One receive for both: a down_msg that the current receive does not take is
  // handled at once (dropped, as no down handler is set), not kept for later.
  for (int i = 0; i < 2 * subscribers; ++i)
    self->receive([&](double sum) { right += sum == 100.0 ? 1 : 0; }, [&](troupe::down_msg&) { ++ended; });
  std::cout << right << " of " << subscribers << " subscribers saw every tick; " << prices.subscriber_count()
            << " left in '" << prices.name() << "'\n";
  return right == subscribers && ended == subscribers && prices.subscriber_count() == 0 ? 0 : 1;
}
