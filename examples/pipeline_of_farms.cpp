// Patterns as one actor: a pipeline of two farms, spawned with spawn_pattern
// and used with request/response like any actor.
#include <troupe/troupe.hpp>

#include <cstdio>
#include <string>

struct order {
  int customer;
  double amount;
};

int main() {
  troupe::actor_system sys;
  auto pattern = troupe::pipeline{
      troupe::farm{troupe::seq{[](order o) { return order{o.customer, o.amount * 1.2}; }}, 4},  // round robin
      troupe::farm{troupe::seq{[](order o) { return std::to_string(o.customer) + ": " + std::to_string(o.amount); }},
                   2, troupe::by_key{[](const order& o) { return o.customer; }}},  // one customer, one replica
      troupe::seq{[](std::string s) { return "[" + s + "]"; }}};
  auto p = troupe::spawn_pattern(sys, pattern);

  troupe::scoped_actor self{sys};
  std::string answer;
  self->request(p, std::chrono::seconds{5}, order{7, 10.0})
      .receive([&](std::string& s) { answer = s; }, [&](troupe::error& e) { answer = e.to_string(); });
  std::printf("%s\n", answer.c_str());
  return answer == "[7: 12.000000]" ? 0 : 1;
}
