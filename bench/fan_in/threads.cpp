// fan_in, plain threads: `senders` producer threads enqueue into one
// moodycamel::ConcurrentQueue (one producer token each); one consumer thread
// busy-polls with a consumer token and checks per-producer order.
#include "impls.hpp"

#include <atomic>
#include <thread>
#include <vector>

#include <concurrentqueue/concurrentqueue.h>

#include "common/spin.hpp"

namespace {

struct item {
  std::int32_t sender;
  std::int64_t seq;
};

}  // namespace

bench::sample bench::run_threads(const params& p) {
  const auto senders = static_cast<std::int32_t>(p.get("senders"));
  const auto per_sender = p.get("per_sender");
  const auto total = senders * per_sender;
  moodycamel::ConcurrentQueue<item> q;
  std::atomic<bool> go{false};
  std::atomic<int> ready{0};
  std::vector<std::thread> producers;
  for (std::int32_t id = 0; id < senders; ++id) {
    producers.emplace_back([&, id] {
      moodycamel::ProducerToken tok{q};
      ready.fetch_add(1);
      spin_wait wait;
      while (!go.load(std::memory_order_acquire)) wait();
      for (std::int64_t seq = 0; seq < per_sender; ++seq) q.enqueue(tok, item{id, seq});
    });
  }
  {
    spin_wait wait;
    while (ready.load() < senders) wait();
  }
  std::vector<std::int64_t> expected(static_cast<size_t>(senders), 0);
  std::int64_t received = 0;
  std::string failure;
  stopwatch sw;
  go.store(true, std::memory_order_release);
  {
    moodycamel::ConsumerToken ctok{q};
    item it;
    spin_wait wait;
    while (received < total) {
      if (!q.try_dequeue(ctok, it)) {
        wait();  // busy poll
        continue;
      }
      wait.reset();
      if (it.sender < 0 || it.sender >= senders || expected[static_cast<size_t>(it.sender)] != it.seq) {
        if (failure.empty())
          failure = "consumer got out-of-order or unknown item: sender " + std::to_string(it.sender) + ", seq " +
                    std::to_string(it.seq);
      } else {
        ++expected[static_cast<size_t>(it.sender)];
      }
      ++received;
    }
  }
  sample s;
  s.wall_s = sw.seconds();
  for (auto& t : producers) t.join();
  check(failure.empty(), failure);
  check_eq("items received", total, received);
  for (std::int32_t id = 0; id < senders; ++id)
    check_eq("items from producer " + std::to_string(id), per_sender, expected[static_cast<size_t>(id)]);
  return s;
}
