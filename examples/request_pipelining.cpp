// request_pipelining: a client keeps many requests in flight to a slow
// backend (then: responses handled as they come), and a gateway that must
// answer in order uses await (nothing else runs until the response is in).
#include <troupe/troupe.hpp>

#include <iostream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

struct run_atom {};
struct result_atom {};

int main() {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  // A backend that takes a while per request (a database, say).
  auto backend = sys.spawn([](troupe::actor_ctx&) {
    return troupe::behavior{[](int key) {
      std::this_thread::sleep_for(1ms);
      return key * key;
    }};
  });

  // [pipelining]
  struct progress {
    int answered = 0;
    long sum = 0;
  };
  // 16 requests in flight at once: none waits for the one before it.
  auto client = sys.spawn([backend](troupe::stateful_actor<progress>& self) {
    return troupe::behavior{[&self, backend](run_atom) {
                              for (int key = 1; key <= 16; ++key)
                                self.request(backend, 10s, key).then([&self](int square) {
                                  ++self.state().answered;
                                  self.state().sum += square;
                                });
                            },
                            [&self](result_atom) { return std::make_tuple(self.state().answered, self.state().sum); }};
  });
  // [/pipelining]

  // [await]
  // A gateway answers each lookup before it looks at the next message: its
  // log is in request order whatever the backend's timing.
  auto gateway = sys.spawn([backend](troupe::stateful_actor<std::vector<int>>& self) {
    return troupe::behavior{
        [&self, backend](int key) {
          self.request(backend, 10s, key).await([&self](int square) { self.state().push_back(square); });
        },
        [&self](result_atom) { return self.state(); }};
  });
  // [/await]

  troupe::scoped_actor self{sys};
  self->send(client, run_atom{});
  for (int key : {3, 1, 2}) self->send(gateway, key);
  int answered = 0;
  long sum = 0;
  // The result_atom below waits behind the awaits and the pending then()s.
  for (int tries = 0; tries < 1000 && answered < 16; ++tries) {
    self->request(client, 10s, result_atom{})
        .receive([&](int a, long s) { answered = a, sum = s; }, [](troupe::error&) {});
    if (answered < 16) std::this_thread::sleep_for(1ms);
  }
  std::vector<int> log;
  self->request(gateway, 10s, result_atom{}).receive([&](std::vector<int>& v) { log = v; }, [](troupe::error&) {});
  std::cout << "client: " << answered << " answers, sum " << sum << "; gateway log:";
  for (int v : log) std::cout << ' ' << v;
  std::cout << '\n';
  return answered == 16 && sum == 1496 && log == std::vector<int>{9, 1, 4} ? 0 : 1;
}
