#include <gtest/gtest.h>

#include "troupe/troupe.hpp"

using namespace std::chrono_literals;

TEST(actor, ping) {
  troupe::actor_system sys{troupe::config{}.workers(2)};
  auto a = sys.spawn([](troupe::event_actor&) {
    return troupe::behavior{[](int x) { return x * 2; }};
  });
  troupe::scoped_actor self{sys};
  int got = 0;
  self->request(a, 1s, 21).receive([&](int v) { got = v; }, [](troupe::error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(got, 42);
}
