// typed_calculator: a typed actor. Its interface is part of its type, so a
// message outside the interface is a compile error, and dispatch is static.
#include <troupe/troupe.hpp>

#include <iostream>
#include <string>

using namespace std::chrono_literals;
// [typed]
struct add_atom {};
struct sub_atom {};
using calculator = troupe::typed_actor<int(add_atom, int, int), int(sub_atom, int, int)>;

calculator::behavior_type calculator_impl(troupe::actor_ctx&) {
  return {[](add_atom, int a, int b) { return a + b; }, [](sub_atom, int a, int b) { return a - b; }};
}
// [/typed]

// What compiles: `sendable<...>` is false where self.send(calc, ...) would not compile.
// [guide_15]
template <class... Ts>
concept sendable = requires(troupe::blocking_actor& self, calculator calc, Ts... xs) { self.send(calc, xs...); };
static_assert(sendable<add_atom, int, int>);
static_assert(!sendable<std::string>);    // not in the interface
static_assert(!sendable<add_atom, int>);  // wrong arity
// [/guide_15]

int main() {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  calculator calc = sys.spawn(calculator_impl);  // a typed handle
  troupe::scoped_actor self{sys};
  int sum = 0, difference = 0;
  self->request(calc, 5s, add_atom{}, 40, 2).receive([&](int v) { sum = v; }, [](troupe::error&) {});
  // Event actors use typed handles the same way.
  auto me = self.handle();
  sys.spawn([calc, me](troupe::actor_ctx& client) {
    client.request(calc, 5s, sub_atom{}, 50, 8).then([&client, me](int v) { client.send(me, v); });
  });
  self->receive([&](int v) { difference = v; });
  std::cout << "40 + 2 = " << sum << ", 50 - 8 = " << difference << '\n';
  return sum == 42 && difference == 42 ? 0 : 1;
}
