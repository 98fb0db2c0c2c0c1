// Google Benchmark figures of troupe's building blocks, next to the bare
// moodycamel queues in queues.cpp: the MPSC mailbox queue, the message pool,
// a whole message (make + destroy), and one send + receive between two
// event actors on one worker (a ping-pong round trip).
#include <benchmark/benchmark.h>

#include <troupe/detail/mpsc_queue.hpp>
#include <troupe/detail/pool.hpp>
#include <troupe/troupe.hpp>
#include <troupe/util/spsc_ring.hpp>

#include "micro/handoff.hpp"

#include <atomic>
#include <future>
#include <thread>

namespace {

struct node : troupe::mpsc_node {
  int value = 0;
};

void mpsc_push_pop(benchmark::State& state) {
  troupe::mpsc_queue q;
  node n;
  for (auto _ : state) {
    q.push(&n);
    benchmark::DoNotOptimize(q.pop());
  }
}
BENCHMARK(mpsc_push_pop);

void pool_allocate_deallocate(benchmark::State& state) {
  for (auto _ : state) {
    void* p = troupe::pool_allocate(64);
    benchmark::DoNotOptimize(p);
    troupe::pool_deallocate(p, 64);
  }
}
BENCHMARK(pool_allocate_deallocate);

void message_make_destroy(benchmark::State& state) {
  for (auto _ : state) {
    auto* m = troupe::detail::make_message(troupe::actor{}, 0, 42);
    benchmark::DoNotOptimize(m);
    troupe::detail::destroy_message(m);
  }
}
BENCHMARK(message_make_destroy);

void spsc_ring_push_pop(benchmark::State& state) {
  troupe::spsc_ring<std::int32_t> r{1024};
  std::int32_t v = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(r.try_push(v));
    benchmark::DoNotOptimize(r.try_pop(v));
    benchmark::DoNotOptimize(v);
  }
}
BENCHMARK(spsc_ring_push_pop);

/// Same hand-off as rwq_handoff in queues.cpp (micro/handoff.hpp), over troupe's ring.
void spsc_ring_handoff(benchmark::State& state) {
  troupe::spsc_ring<std::int32_t> r{1 << 16};
  bench::run_handoff(
      state, [&](std::int32_t x) { return r.try_push(x); }, [&](std::int32_t& v) { return r.try_pop(v); });
}
BENCHMARK(spsc_ring_handoff)->UseRealTime();

struct ball {
  std::int64_t left;
};

// Round trips between two actors on one worker; the time is per round trip.
void actor_round_trip(benchmark::State& state) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::scoped_actor self{sys};
  auto pong =
      sys.spawn([](troupe::event_actor& s) { return troupe::behavior{[&s](ball b) { s.send(s.sender(), b); }}; });
  auto ping = sys.spawn(
      [](troupe::event_actor& s, troupe::actor pong, troupe::actor main) {
        return troupe::behavior{[&s, pong, main](ball b) {
          if (b.left == 0) s.send(main, b);
          else s.send(pong, ball{b.left - 1});
        }};
      },
      pong, self.handle());
  constexpr std::int64_t batch = 10000;
  for (auto _ : state) {
    self->send(ping, ball{batch});
    self->receive([](ball) {});
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(actor_round_trip)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
