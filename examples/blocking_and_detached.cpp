// blocking_and_detached: actors with a thread of their own. A blocking actor
// pulls messages with receive(); a detached actor is an ordinary event actor
// that does not share a worker; at shutdown a kill makes receive() throw.
#include <troupe/troupe.hpp>

#include <atomic>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
struct stop_atom {};

int main() {
  std::atomic<bool> stopped_by_shutdown{false};
  std::size_t logged = 0;
  bool timed_out = false, other_thread = false;
  {
    troupe::actor_system sys{troupe::config{.workers = 1}};
    troupe::scoped_actor self{sys};
    auto me = self.handle();
    // [blocking]
    auto logger = sys.spawn_blocking([me](troupe::blocking_actor& b) {
      std::vector<std::string> lines;
      for (bool running = true; running;)
        b.receive([&](std::string& line) { lines.push_back(std::move(line)); }, [&](stop_atom) { running = false; });
      b.send(me, lines.size());  // then return: the actor ends normally
    });
    // [/blocking]
    // [guide_14]
    // An event actor on a thread of its own (placement::own_thread("<1>") would pin it).
    auto detached = sys.spawn(troupe::placement::own_thread(), [](troupe::actor_ctx&) {
      return troupe::behavior{[](troupe::get_atom) { return std::this_thread::get_id(); }};
    });
    // [/guide_14]
    // Never told to stop: shutdown kills it, and receive() throws troupe::actor_exited.
    // [guide_13]
    sys.spawn_blocking([&stopped_by_shutdown](troupe::blocking_actor& b) {
      try {
        for (;;) b.receive([](int) {});
      } catch (const troupe::actor_exited& e) {
        stopped_by_shutdown = e.reason() == troupe::errc::system_shutdown;
        throw;  // let it end the actor
      }
    });
    // [/guide_13]
    timed_out = !self->receive_for(10ms, [](int) {});  // nothing sent yet
    for (auto s : {"one", "two", "three"}) self->send(logger, std::string{s});
    self->send(logger, stop_atom{});
    self->receive([&](std::size_t n) { logged = n; });
    self->request(detached, 5s, troupe::get_atom{})
        .receive([&](std::thread::id id) { other_thread = id != std::this_thread::get_id(); }, [](troupe::error&) {});
  }  // scoped_actor first, then the system: drains, stops idle actors, joins threads
  std::cout << "logged " << logged << " lines; receive_for timed out: " << timed_out
            << "; detached on its own thread: " << other_thread << "; stopped by shutdown: " << stopped_by_shutdown
            << '\n';
  return logged == 3 && timed_out && other_thread && stopped_by_shutdown ? 0 : 1;
}
