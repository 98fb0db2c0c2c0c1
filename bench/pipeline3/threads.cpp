// pipeline3, plain threads: three threads and two moodycamel SPSC queues of
// 1024 slots, busy polling (with the bench's spin_wait backoff).
#include "impls.hpp"

#include <readerwriterqueue/readerwriterqueue.h>

#include <thread>

#include "common/spin.hpp"

bench::sample bench::run_threads(const params& p) {
  using bench::pipeline3::tuple;
  const auto tuples = p.get("tuples");
  moodycamel::ReaderWriterQueue<tuple> q1{1024}, q2{1024};
  pipeline3::tally t;
  stopwatch sw;
  std::thread source{[&] {
    spin_wait wait;
    for (std::int64_t i = 0; i < tuples; ++i)
      while (!q1.try_enqueue(tuple{i % 1024, i, i})) wait();
  }};
  std::thread forwarder{[&] {
    spin_wait wait;
    tuple x;
    for (std::int64_t i = 0; i < tuples; ++i) {
      while (!q1.try_dequeue(x)) wait();
      while (!q2.try_enqueue(x)) wait();
    }
  }};
  {
    spin_wait wait;
    tuple x;
    for (std::int64_t i = 0; i < tuples; ++i) {
      while (!q2.try_dequeue(x)) wait();
      t.add(x);
    }
  }
  sample s;
  s.wall_s = sw.seconds();
  source.join();
  forwarder.join();
  t.check(tuples);
  return s;
}
