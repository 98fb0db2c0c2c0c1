// pipeline9, plain threads: a source thread, seven forwarder threads and the
// calling thread as the sink, joined by eight moodycamel SPSC queues of 1024
// slots, busy polling (with the bench's spin_wait backoff).
#include "impls.hpp"

#include <readerwriterqueue/readerwriterqueue.h>

#include <memory>
#include <thread>
#include <vector>

#include "common/spin.hpp"

bench::sample bench::run_threads(const params& p) {
  using bench::pipeline9::tuple;
  using queue = moodycamel::ReaderWriterQueue<tuple>;
  const auto tuples = p.get("tuples");
  constexpr int hops = pipeline9::forwarders + 1;
  std::vector<std::unique_ptr<queue>> q;
  for (int k = 0; k < hops; ++k) q.push_back(std::make_unique<queue>(1024));
  pipeline9::tally t;
  std::vector<std::thread> threads;
  stopwatch sw;
  threads.emplace_back([&] {
    spin_wait wait;
    auto& out = *q[0];
    for (std::int64_t i = 0; i < tuples; ++i)
      while (!out.try_enqueue(tuple{i % 1024, i, i})) wait();
  });
  for (int k = 0; k < pipeline9::forwarders; ++k) {
    threads.emplace_back([&, k] {
      spin_wait wait;
      auto& in = *q[static_cast<std::size_t>(k)];
      auto& out = *q[static_cast<std::size_t>(k) + 1];
      tuple x;
      for (std::int64_t i = 0; i < tuples; ++i) {
        while (!in.try_dequeue(x)) wait();
        while (!out.try_enqueue(x)) wait();
      }
    });
  }
  {
    spin_wait wait;
    auto& in = *q[hops - 1];
    tuple x;
    for (std::int64_t i = 0; i < tuples; ++i) {
      while (!in.try_dequeue(x)) wait();
      t.add(x);
    }
  }
  sample s;
  s.wall_s = sw.seconds();
  for (auto& th : threads) th.join();
  t.check(tuples);
  return s;
}
