// behaviors: handlers chosen by exact argument types, state in captures or in
// a class, spawn arguments, a default handler for strays, and the registry.
#include <troupe/troupe.hpp>

#include <atomic>
#include <iostream>
#include <memory>
#include <string>

using namespace std::chrono_literals;

// [guide_3]
class counter_actor : public troupe::event_actor {  // classes are optional
 public:
  explicit counter_actor(int start) : n_{start} {}

 protected:
  troupe::behavior make_behavior() override {
    return {[this](int x) { n_ += x; }, [this](troupe::get_atom) { return n_; }};
  }

 private:
  int n_;
};
// [/guide_3]

int main() {
  std::atomic<int> strays{0};
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto calc = sys.spawn([&strays](troupe::actor_ctx& self) {
    // [guide_7]
    self.set_default_handler([&strays](troupe::message& m) {
      ++strays;
      if (m.match<std::string>()) std::cout << "stray text: " << m.get<std::string>() << '\n';
      else std::cout << "stray message of type " << m.type_name() << '\n';
    });
    // [/guide_7]
    // [handlers]
    return troupe::behavior{
        [](int a, int b) { return a + b; },                       // (2, 3)
        [](int a, double b) { return static_cast<int>(a * b); },  // (2, 2.5)
        [](const std::string& s, int n) { return static_cast<int>(s.size()) * n; },
        [](std::unique_ptr<int>& p) { return *p + 1; },  // move-only values work
    };
    // [/handlers]
  });
  // [guide_2]
  auto counter = sys.spawn(
      [](troupe::actor_ctx&, int start) { return troupe::behavior{[n = start](int x) mutable { return n += x; }}; },
      10);
  // [/guide_2]
  auto counter2 = sys.spawn<counter_actor>(10);
  // [guide_11]
  sys.registry().put("counter", counter);  // registers (or replaces) a name
  // [/guide_11]
  troupe::scoped_actor self{sys};
  self->send(calc, std::string{"no handler takes a lone string"});
  self->send(calc, 2, 2.5f);  // (int, float): no conversion to (int, double)
  self->send(counter2, 5);    // FIFO per sender: handled before the request below
  int sum = 0;
  auto add = [&](int v) { sum += v; };
  auto fail = [](troupe::error& e) { std::cerr << e.to_string() << '\n'; };
  self->request(calc, 5s, 2, 3).receive(add, fail);                       // 5
  self->request(calc, 5s, 2, 2.5).receive(add, fail);                     // 5
  self->request(calc, 5s, std::string{"abc"}, 3).receive(add, fail);      // 9
  self->request(calc, 5s, std::make_unique<int>(41)).receive(add, fail);  // 42
  // [guide_12]
  self->request(sys.registry().get("counter"), 5s, 5).receive(add, fail);  // 15
  // [/guide_12]
  self->request(counter2, 5s, troupe::get_atom{}).receive(add, fail);  // 15
  std::cout << "sum: " << sum << ", strays: " << strays << '\n';
  return sum == 5 + 5 + 9 + 42 + 15 + 15 && strays == 2 && sys.unexpected_messages() == 0 ? 0 : 1;
}
