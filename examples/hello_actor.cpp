// hello_actor: spawn an actor from a lambda, ask it a question, check the answer.
// [hello]
#include <iostream>
#include <string>
#include <troupe/troupe.hpp>

int main() {
  troupe::actor_system sys;  // one worker per available core
  auto greeter = sys.spawn(
      [](troupe::actor_ctx&) { return troupe::behavior{[](const std::string& who) { return "hello, " + who; }}; });
  troupe::scoped_actor self{sys};  // lets main() send, request and receive
  std::string answer;
  self->request(greeter, std::chrono::seconds{10}, std::string{"world"})
      .receive([&](const std::string& s) { answer = s; }, [&](troupe::error& e) { answer = e.to_string(); });
  std::cout << answer << '\n';
  return answer == "hello, world" ? 0 : 1;
}
// [/hello]
