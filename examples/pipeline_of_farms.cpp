// Patterns used from actors: a pipeline of two farms, spawned with
// spawn_pattern (a stream graph with an entry actor that answers) and asked
// with request/response like any actor.
#include <troupe/troupe.hpp>

#include <cstdio>
#include <string>

struct order {
  int customer;
  double amount;
};

int main() {
  troupe::actor_system sys;
  // [pattern]
  auto pattern = troupe::pipeline{
      troupe::farm{troupe::seq{[](order o) { return order{o.customer, o.amount * 1.2}; }}, 4},  // round robin
      troupe::farm{troupe::seq{[](order o) { return std::to_string(o.customer) + ": " + std::to_string(o.amount); }}, 2,
                   troupe::by_key{&order::customer}},  // one customer, one replica
      troupe::seq{[](const std::string& s) { return "[" + s + "]"; }}};
  auto p = troupe::spawn_pattern(sys, pattern);  // converts to its entry actor

  troupe::scoped_actor self{sys};
  std::string answer;
  self->request(p, std::chrono::seconds{5}, order{7, 10.0})  // answered with the item's result
      .receive([&](std::string& s) { answer = s; }, [&](troupe::error& e) { answer = e.to_string(); });
  // [/pattern]
  std::printf("%s\n", answer.c_str());
  return answer == "[7: 12.000000]" ? 0 : 1;
}
