// request_response: requests from an event actor (then) and from main
// (receive), a two-value reply, a response_promise, and errors as values.
#include <troupe/troupe.hpp>

#include <iostream>
#include <string>
#include <tuple>

using namespace std::chrono_literals;
struct divide_atom {};

int main() {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  // Returning a tuple replies with several values in one message.
  // [guide_5]
  auto divider = sys.spawn([](troupe::actor_ctx&) {
    return troupe::behavior{[](divide_atom, int a, int b) { return std::tuple{a / b, a % b}; }};
  });
  // [/guide_5]
  // Answers later: asks the divider first, then fulfils its promise.
  // [guide_6]
  auto formatter = sys.spawn([divider](troupe::actor_ctx& self) {
    return troupe::behavior{[&self, divider](int a, int b) {
      auto rp = self.make_response_promise();
      self.request(divider, 5s, divide_atom{}, a, b).then([rp](int q, int r) mutable {
        rp.deliver(std::to_string(q) + " rest " + std::to_string(r));
      });
      return rp;
    }};
  });
  // [/guide_6]
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  // An event actor never blocks: then() runs when the response (or an error) arrives.
  // Its behavior is empty, so it ends by itself once both answers are in.
  // [client]
  sys.spawn([me, formatter](troupe::actor_ctx& client) {
    client.request(formatter, 5s, 17, 5).then([&client, me](std::string& s) { client.send(me, s); });
    client
        .request(formatter, 5s, 2.5)  // nobody handles a double: an error comes back
        .then([&client, me]() { client.send(me, troupe::errc::none); },
              [&client, me](troupe::error& e) { client.send(me, e.code()); });
  });
  // [/client]
  std::string text;
  troupe::errc code = troupe::errc::none;
  self->receive([&](std::string& s) { text = s; });  // other messages wait in the mailbox
  self->receive([&](troupe::errc c) { code = c; });
  int q = 0, r = 0;  // main() blocks on its requests instead
  // [guide_4]
  self->request(divider, 5s, divide_atom{}, 7, 2)
      .receive(
          [&](int x, int y) {
            q = x;
            r = y;
          },
          [](troupe::error& e) { std::cerr << e.to_string() << '\n'; });
  // [/guide_4]
  std::cout << "17 / 5 = " << text << "; 2.5 -> " << troupe::to_string(code) << "; 7 / 2 = " << q << " rest " << r
            << '\n';
  return text == "3 rest 2" && code == troupe::errc::unexpected_message && q == 3 && r == 1 ? 0 : 1;
}
