// tests/consumer/main.cpp: uses an installed troupe through its public API.
// Spawns an actor, sends it a request from a scoped_actor, checks the reply.
#include <troupe/troupe.hpp>

#include <chrono>
#include <cstdio>
#include <string>

int main() {
  using namespace std::chrono_literals;
  int got = 0;
  std::string failure;
  {
    troupe::actor_system sys{troupe::config{.workers = 2}};
    auto doubler = sys.spawn([](troupe::event_actor&) { return troupe::behavior{[](int x) { return x * 2; }}; });
    troupe::scoped_actor self{sys};
    self->request(doubler, 10s, 21)
        .receive([&](int v) { got = v; }, [&](troupe::error& e) { failure = e.to_string(); });
  }  // the system shuts down here
  if (!failure.empty()) {
    std::fprintf(stderr, "troupe_consumer: request failed: %s\n", failure.c_str());
    return 1;
  }
  if (got != 42) {
    std::fprintf(stderr, "troupe_consumer: expected 42, got %d\n", got);
    return 1;
  }
  std::puts("troupe_consumer: ok (21 * 2 == 42)");
  return 0;
}
