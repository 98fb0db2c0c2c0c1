// A node that waits for something outside the graph without blocking its
// worker (stream/node.hpp: waits, hold, waker, on_wake): here a "device" is
// a thread that finishes each batch a little later and wakes the node. The
// graphs run on one worker, where a node that blocked its worker would stop
// every other node: the test checks that another graph on the same worker
// keeps going while the node holds, that everything arrives in order, that
// on_stop may hold, and that cancellation ends a node that holds.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "placements.hpp"
#include "troupe/troupe.hpp"

namespace st = troupe::stream;
using namespace std::chrono_literals;
using waiting = troupe_test::placed_test;

namespace {

/// Runs jobs later on a thread of its own; each job's `done` runs there.
class fake_device {
 public:
  fake_device() : t_{[this] { loop(); }} {}
  ~fake_device() {
    {
      std::lock_guard<std::mutex> g{m_};
      stop_ = true;
    }
    cv_.notify_one();
    t_.join();
  }
  void submit(std::function<void()> done) {
    {
      std::lock_guard<std::mutex> g{m_};
      jobs_.push_back(std::move(done));
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lk{m_};
    for (;;) {
      cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lk.unlock();
      std::this_thread::sleep_for(200us);  // the device at work
      job();
      lk.lock();
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::thread t_;
};

/// Collects `batch` elements, hands them to the device, and holds until it
/// has them back (doubled); on_idle and on_stop send a partial batch.
struct offload : st::node<std::int64_t, std::int64_t> {
  static constexpr bool waits = true;
  std::shared_ptr<fake_device> dev;
  std::size_t batch = 16;
  std::vector<std::int64_t> filling;
  std::shared_ptr<std::vector<std::int64_t>> back;  // what the device returned
  std::shared_ptr<std::atomic<bool>> ready;
  bool in_flight = false;
  std::atomic<int>* holds = nullptr;

  void consume(std::int64_t& x) {
    filling.push_back(x);
    if (filling.size() == batch) submit();
  }
  void on_idle() {
    if (!filling.empty() && !in_flight) submit();
  }
  void on_stop() {
    if (!filling.empty() && !in_flight) submit();
    if (in_flight) hold();
  }
  void on_wake() {
    if (!ready->load()) {
      hold();  // a wake that came early: keep waiting
      return;
    }
    in_flight = false;
    for (auto v : *back) send_next(std::move(v));
    back->clear();
    if (!filling.empty()) submit();  // on_stop left some
  }

 private:
  void submit() {
    if (!back) {
      back = std::make_shared<std::vector<std::int64_t>>();
      ready = std::make_shared<std::atomic<bool>>(false);
    }
    auto work = std::make_shared<std::vector<std::int64_t>>(std::move(filling));
    filling.clear();
    ready->store(false);
    in_flight = true;
    ++*holds;
    dev->submit([work, back = back, ready = ready, w = waker()] {
      for (auto& v : *work) v *= 2;
      *back = std::move(*work);
      ready->store(true);
      w.wake();
    });
    hold();
  }
};

/// Holds at its first element; nothing ever wakes it.
struct never : st::node<std::int64_t, std::int64_t> {
  static constexpr bool waits = true;
  void consume(std::int64_t&) { hold(); }
};

}  // namespace

TEST_P(waiting, a_node_that_holds_does_not_block_its_worker_and_loses_nothing) {
  troupe::actor_system sys{cfg()};
  auto dev = std::make_shared<fake_device>();
  std::atomic<int> holds{0};
  offload o;
  o.dev = dev;
  o.holds = &holds;
  std::mutex m;
  std::vector<std::int64_t> got;
  constexpr std::int64_t n = 5000;
  auto g =
      troupe::spawn_pattern(sys, troupe::pipeline{troupe_test::counting_source(n), o, st::sink([&](std::int64_t x) {
                                                    std::lock_guard<std::mutex> lk{m};
                                                    got.push_back(x);
                                                  })},
                            opts());
  // Meanwhile another graph on the same worker(s) runs to its end.
  std::atomic<std::int64_t> other{0};
  troupe::spawn_pattern(
      sys, troupe::pipeline{troupe_test::counting_source(200'000), st::sink([&](std::int64_t) { other.fetch_add(1); })},
      opts())
      .wait();
  EXPECT_EQ(other.load(), 200'000);
  g.wait();
  ASSERT_EQ(got.size(), static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], 2 * i);
  EXPECT_GE(holds.load(), static_cast<int>(n / 16));
}

TEST_P(waiting, cancel_ends_a_node_that_holds_for_good) {
  troupe::actor_system sys{cfg()};
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{troupe_test::counting_source(1000), never{}, st::sink([](std::int64_t) {})}, opts());
  EXPECT_FALSE(g.wait_for(50ms));
  g.cancel();
  EXPECT_TRUE(g.wait_for(10s));
  EXPECT_TRUE(g.cancelled());
}

TEST(waiting_node, hold_without_declaring_waits_is_an_error) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  struct careless : st::node<std::int64_t, std::int64_t> {
    void consume(std::int64_t&) { hold(); }
  };
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{troupe_test::counting_source(10), careless{}, st::sink([](std::int64_t) {})});
  EXPECT_THROW(g.wait(), std::logic_error);
}

INSTANTIATE_TEST_SUITE_P(placements, waiting, troupe_test::every_placement(), troupe_test::placement_name);
