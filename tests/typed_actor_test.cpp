// Typed actors: interface in the type, static dispatch.
#include <gtest/gtest.h>

#include "troupe/troupe.hpp"

using namespace std::chrono_literals;

namespace {
struct add_atom {};
struct sub_atom {};
struct reset_atom {};
using calculator = troupe::typed_actor<int(add_atom, int, int), int(sub_atom, int, int), void(reset_atom)>;

template <class Handle, class... Ts>
concept can_send = requires(troupe::blocking_actor& self, const Handle& h, Ts... xs) { self.send(h, xs...); };
}  // namespace

// Sending a type outside the interface does not compile (checked here
// without breaking the build): the concept is false.
static_assert(can_send<calculator, add_atom, int, int>);
static_assert(!can_send<calculator, std::string>);
static_assert(!can_send<calculator, add_atom, int>);

TEST(typed_actor, requests_are_dispatched_by_signature) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  // handlers in a different order than the interface: matched by types
  calculator calc = sys.spawn([](troupe::event_actor&) -> calculator::behavior_type {
    return {[](reset_atom) {}, [](sub_atom, int a, int b) { return a - b; },
            [](add_atom, int a, int b) { return a + b; }};
  });
  troupe::scoped_actor self{sys};
  int got = 0;
  self->request(calc, 5s, add_atom{}, 40, 2)
      .receive([&](int v) { got = v; }, [](troupe::error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(got, 42);
  self->request(calc, 5s, sub_atom{}, 40, 2)
      .receive([&](int v) { got = v; }, [](troupe::error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(got, 38);
  bool reset = false;
  self->request(calc, 5s, reset_atom{})
      .receive([&]() { reset = true; }, [](troupe::error& e) { FAIL() << e.to_string(); });
  EXPECT_TRUE(reset);
}

TEST(typed_actor, event_actors_talk_to_typed_actors) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  calculator calc = sys.spawn([](troupe::event_actor&) -> calculator::behavior_type {
    return {[](add_atom, int a, int b) { return a + b; }, [](sub_atom, int a, int b) { return a - b; },
            [](reset_atom) {}};
  });
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  sys.spawn([](troupe::event_actor& s, calculator c,
               troupe::actor back) { s.request(c, 5s, add_atom{}, 1, 2).then([&s, back](int v) { s.send(back, v); }); },
            calc, me);
  int got = 0;
  self->receive([&](int v) { got = v; });
  EXPECT_EQ(got, 3);
}

// Monitors, links and exits take a typed handle as it is, without address().
TEST(typed_actor, typed_handles_are_monitored_linked_and_sent_exits_directly) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto spawn_calc = [&] {
    return calculator{sys.spawn([](troupe::event_actor&) -> calculator::behavior_type {
      return {[](add_atom, int a, int b) { return a + b; }, [](sub_atom, int a, int b) { return a - b; },
              [](reset_atom) {}};
    })};
  };
  troupe::scoped_actor self{sys};
  calculator watched = spawn_calc();
  self->monitor(watched);
  self->send_exit(watched, troupe::error{troupe::errc::user_shutdown, "typed"});
  troupe::error reason;
  EXPECT_TRUE(self->receive_for(5s, [&](troupe::down_msg& m) { reason = m.reason; }));
  EXPECT_EQ(reason.code(), troupe::errc::user_shutdown) << reason.to_string();

  // A monitor taken back sends nothing; a link brings the exit.
  calculator quiet = spawn_calc();
  self->monitor(quiet);
  self->demonitor(quiet);
  calculator linked = spawn_calc();
  std::string from;
  self->set_exit_handler([&](troupe::exit_msg& m) { from = m.reason.message(); });
  self->link_to(linked);
  self->unlink_from(linked);
  self->link_to(linked);
  sys.send_exit(quiet, troupe::error{troupe::errc::user_shutdown, "quiet"});
  sys.send_exit(linked, troupe::error{troupe::errc::user_shutdown, "linked"});
  bool down = false;
  for (int i = 0; i < 100 && from.empty(); ++i) (void)self->receive_for(50ms, [&](troupe::down_msg&) { down = true; });
  EXPECT_EQ(from, "linked");
  (void)self->receive_for(200ms, [&](troupe::down_msg&) { down = true; });
  EXPECT_FALSE(down) << "a down_msg after demonitor";
}
