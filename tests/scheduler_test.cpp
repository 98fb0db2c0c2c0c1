// Scheduler knobs: worker count, polling strategies, throughput, affinity,
// idle CPU use.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <atomic>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "troupe/troupe.hpp"

using namespace std::chrono_literals;
using troupe::behavior;
using troupe::event_actor;

namespace {

struct go_atom {};

long self_send_total(troupe::config cfg) {
  troupe::actor_system sys{std::move(cfg)};
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  constexpr int actors = 10, per = 2000;
  for (int i = 0; i < actors; ++i)
    sys.spawn([me](event_actor& self) {
      self.send(self.self(), 0);
      return behavior{[&self, me](int n) {
        if (n + 1 == per) {
          self.send(me, 1L);
          self.quit();
        } else {
          self.send(self.self(), n + 1);
        }
      }};
    });
  long done = 0;
  for (int i = 0; i < actors; ++i) self->receive([&](long x) { done += x; });
  return done;
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace

class polling_strategy : public ::testing::TestWithParam<troupe::polling> {};

TEST_P(polling_strategy, every_strategy_and_throughput_completes_the_work) {
  for (std::size_t tp : {1u, 4u, 100u})
    EXPECT_EQ(self_send_total(troupe::config{.workers = 2, .polling = GetParam(), .throughput = tp}), 10);
}

INSTANTIATE_TEST_SUITE_P(scheduler, polling_strategy,
                         ::testing::Values(troupe::polling::aggressive, troupe::polling::moderate,
                                           troupe::polling::relaxed));

TEST(scheduler, uses_the_configured_number_of_workers) {
  troupe::actor_system sys{troupe::config{.workers = 3}};
  EXPECT_EQ(sys.worker_count(), 3u);
  // three actors that block together can only all run if there are 3 workers
  std::atomic<int> arrived{0};
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  for (int i = 0; i < 3; ++i)
    sys.spawn([&arrived, me](event_actor& self) {
      ++arrived;
      auto deadline = std::chrono::steady_clock::now() + 10s;
      while (arrived.load() < 3 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      self.send(me, arrived.load());
    });
  for (int i = 0; i < 3; ++i) self->receive([](int n) { EXPECT_EQ(n, 3); });
}

TEST(scheduler, default_worker_count_is_the_available_cores) {
  troupe::actor_system sys;
  EXPECT_EQ(sys.worker_count(), troupe::available_cores().size());
}

TEST(scheduler, worker_affinity_pins_workers) {
  auto cores = troupe::available_cores();
  ASSERT_FALSE(cores.empty());
  auto core = cores.back();
  troupe::actor_system sys{troupe::config{.workers = 2, .worker_affinity = "<" + std::to_string(core) + ">"}};
  auto a = sys.spawn([](event_actor&) { return behavior{[](go_atom) { return sched_getcpu(); }}; });
  troupe::scoped_actor self{sys};
  for (int i = 0; i < 20; ++i)
    self->request(a, 5s, go_atom{})
        .receive([&](int cpu) { EXPECT_EQ(cpu, core); }, [](troupe::error& e) { FAIL() << e.to_string(); });
}

TEST(scheduler, detached_and_blocking_affinity_pin_their_threads) {
  auto core = troupe::available_cores().front();
  auto aff = "<" + std::to_string(core) + ">";
  troupe::actor_system sys{troupe::config{.workers = 1, .detached_affinity = aff, .blocking_affinity = aff}};
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  auto d = sys.spawn_detached([](event_actor&) { return behavior{[](go_atom) { return sched_getcpu(); }}; });
  sys.spawn_blocking([me](troupe::blocking_actor& b) { b.send(me, sched_getcpu(), 0); });
  self->request(d, 5s, go_atom{}).receive([&](int cpu) { EXPECT_EQ(cpu, core); }, [](troupe::error&) { FAIL(); });
  self->receive([&](int cpu, int) { EXPECT_EQ(cpu, core); });
}

TEST(scheduler, an_actor_placed_on_its_own_pinned_thread_runs_there) {
  auto core = troupe::available_cores().back();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::scoped_actor self{sys};
  auto where = troupe::placement::own_thread("<" + std::to_string(core) + ">");
  auto a = sys.spawn(where, [](event_actor&) { return behavior{[](go_atom) { return sched_getcpu(); }}; });
  for (int i = 0; i < 5; ++i)
    self->request(a, 5s, go_atom{}).receive([&](int cpu) { EXPECT_EQ(cpu, core); }, [](troupe::error&) { FAIL(); });
  auto pooled =
      sys.spawn(troupe::placement::pool(), [](event_actor&) { return behavior{[](int x) { return x + 1; }}; });
  self->request(pooled, 5s, 1).receive([](int v) { EXPECT_EQ(v, 2); }, [](troupe::error&) { FAIL(); });
  EXPECT_THROW(sys.spawn(troupe::placement::own_thread("<0-"), [](event_actor&) { return behavior{}; }),
               troupe::affinity_error);
}

TEST(scheduler, bad_affinity_is_rejected_with_position) {
  try {
    troupe::actor_system sys{troupe::config{.worker_affinity = "<0> <1-x>"}};
    FAIL() << "accepted a malformed affinity string";
  } catch (const troupe::config_error& e) {
    EXPECT_EQ(e.key(), "worker-affinity");
    EXPECT_NE(std::string{e.what()}.find("position 7"), std::string::npos) << e.what();
  }
  EXPECT_THROW(troupe::actor_system{troupe::config{.worker_affinity = "<4096>"}}, troupe::config_error);
}

TEST(scheduler, idle_system_sleeps_in_moderate_and_relaxed_polling) {
  for (auto p : {troupe::polling::moderate, troupe::polling::relaxed}) {
    troupe::actor_system sys{troupe::config{.workers = 2, .polling = p}};
    auto a = sys.spawn([](event_actor&) { return behavior{[](int x) { return x; }}; });
    {
      troupe::scoped_actor self{sys};
      self->request(a, 5s, 1).receive([](int) {}, [](troupe::error&) {});
    }
    std::this_thread::sleep_for(50ms);  // let workers finish spinning and park
    auto cpu0 = cpu_seconds();
    auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(300ms);
    auto wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto used = cpu_seconds() - cpu0;
    // Two spinning workers would use ~2x wall time; parked ones use ~0.
    EXPECT_LT(used, 0.1 * wall) << "polling " << troupe::to_string(p) << " used " << used << " s CPU in " << wall
                                << " s idle";
  }
}

// A token passed around a ring is sequential work: on 2 workers it must not
// keep the second one busy (woken per message, or handed the token every few
// activations and searching in between).
TEST(scheduler, a_sequential_chain_on_two_workers_uses_about_one_core) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  const auto me = self.handle();
  constexpr int ring_size = 20;
  constexpr std::int64_t hops = 200'000;
  std::vector<troupe::actor> ring;
  for (int i = 0; i < ring_size; ++i)
    ring.push_back(sys.spawn([me](event_actor& a) {
      auto next = std::make_shared<troupe::actor>();
      return behavior{[next](troupe::actor n) { *next = std::move(n); },
                      [&a, next, me](std::int64_t h) {
                        if (h == hops) a.send(me, h);
                        else a.send(*next, h + 1);
                      }};
    }));
  for (int i = 0; i < ring_size; ++i) self->send(ring[i], ring[(i + 1) % ring_size]);
  auto cpu0 = cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  self->send(ring[0], std::int64_t{1});
  std::int64_t got = 0;
  self->receive([&](std::int64_t h) { got = h; });
  auto wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto used = cpu_seconds() - cpu0;
  EXPECT_EQ(got, hops);
  // One busy worker: ~1x wall time; a second one kept busy: ~2x.
  EXPECT_LT(used, 1.5 * wall + 0.02) << "used " << used << " s CPU in " << wall << " s";
  for (auto& a : ring) sys.send_exit(a, troupe::error{troupe::errc::user_shutdown, "done"});
}

// Waking an actor into the next slot wakes no parked worker; the parked one
// still takes it, after its timed sleep, while the slot's owner is stuck in a
// long activation (here one that waits for the woken actor itself).
TEST(scheduler, an_actor_behind_a_long_activation_is_taken_by_another_worker) {
  for (auto p : {troupe::polling::moderate, troupe::polling::relaxed, troupe::polling::aggressive}) {
    troupe::actor_system sys{troupe::config{.workers = 2, .polling = p}};
    troupe::scoped_actor self{sys};
    const auto me = self.handle();
    auto flag = std::make_shared<std::atomic<bool>>(false);
    auto b = sys.spawn([flag](event_actor&) { return behavior{[flag](go_atom) { flag->store(true); }}; });
    auto a = sys.spawn([flag, b, me](event_actor& s) {
      return behavior{[&s, flag, b, me](go_atom) {
        std::this_thread::sleep_for(5ms);  // the other worker stops searching and parks
        s.send(b, go_atom{});              // into this worker's next slot
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (!flag->load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
        s.send(me, flag->load());
      }};
    });
    // Let both workers go idle first, so the other one is parked.
    std::this_thread::sleep_for(20ms);
    self->send(a, go_atom{});
    bool ran = false;
    self->receive([&](bool r) { ran = r; });
    EXPECT_TRUE(ran) << "polling " << troupe::to_string(p);
  }
}
