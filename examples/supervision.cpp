// supervision: a monitor learns why an actor ended, a link makes a partner
// share its fate, and a supervisor traps the exit and starts a replacement.
#include <troupe/troupe.hpp>

#include <iostream>
#include <stdexcept>

using namespace std::chrono_literals;
struct crash_atom {};

troupe::behavior worker(troupe::actor_ctx&) {
  return {[](int x) { return 2 * x; }, [](crash_atom) { throw std::runtime_error("crashed on purpose"); }};
}

troupe::behavior supervisor(troupe::actor_ctx& self, const troupe::actor& report) {
  auto start = [&self, report](int restarts) {
    auto w = self.spawn(worker);
    self.link_to(w);
    self.send(report, restarts, w);
  };
  // With an exit handler, a linked worker's failure arrives here instead of ending us.
  self.set_exit_handler([start, restarts = 0](troupe::exit_msg& m) mutable {
    if (m.reason && m.reason != troupe::errc::system_shutdown) start(++restarts);
  });
  start(0);
  return {[](troupe::get_atom) {}};  // a behavior keeps the supervisor alive
}

int main() {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  auto sup = sys.spawn(supervisor, self.handle());
  troupe::actor w, fresh;
  int restarts = -1, doubled = 0;
  self->receive([&](int, const troupe::actor& a) { w = a; });
  // [guide_9]
  auto partner = sys.spawn([w](troupe::actor_ctx& p) {  // linked, no exit handler
    p.link_to(w);
    return troupe::behavior{[](int x) { return x; }};
  });
  // [/guide_9]
  self->monitor(w);
  self->monitor(partner);
  self->send(w, crash_atom{});  // the handler throws: the worker ends with unhandled_exception
  troupe::error worker_reason, partner_reason;
  // [guide_8]
  for (int i = 0; i < 2; ++i)
    self->receive([&](troupe::down_msg& m) { (m.source == w ? worker_reason : partner_reason) = m.reason; });
  // [/guide_8]
  self->receive([&](int n, const troupe::actor& a) {
    restarts = n;
    fresh = a;
  });
  self->request(fresh, 5s, 21).receive([&](int v) { doubled = v; }, [](troupe::error&) {});
  std::cout << "worker: " << worker_reason.to_string() << "\npartner: " << partner_reason.to_string()
            << "\nrestarts: " << restarts << ", the replacement answers " << doubled << '\n';
  bool ok = worker_reason == troupe::errc::unhandled_exception && partner_reason == troupe::errc::unhandled_exception &&
            restarts == 1 && doubled == 42;
  return ok ? 0 : 1;
}
