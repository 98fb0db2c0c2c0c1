// layer: stream
// waker.hpp: how something outside a graph wakes one of its runners: mail to
// an edge's actor (edge.hpp), a node's wake_handle (a device that finished,
// stream/node.hpp). The waker outlives the runner when something still holds
// it (a peer's handle, a device callback in flight), so it holds the
// runner's address, which the runner arms at its first step and disarms
// before it ends: a wake before the first step is not needed (that step
// looks anyway), and one after the end does nothing. A wake runs under the
// waker's lock, so the runner's disarm waits for a wake in flight: the
// runner, and its graph, outlive every wake. (The waker never owns the
// graph: a device's or a peer's thread must never be the one that destroys
// it, with the node that owns that thread's work.)
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "troupe/detail/channel.hpp"
#include "troupe/detail/graph_state.hpp"

namespace troupe::detail {

class runner_waker {
 public:
  /// The runner's first step: wakes reach it from now on.
  void arm(runner_base& r) {
    std::lock_guard<std::mutex> lock{mtx_};
    target_ = &r;
  }
  /// Before the runner ends: no wake reaches it any more, and none is in
  /// flight when this returns.
  void disarm() noexcept {
    std::lock_guard<std::mutex> lock{mtx_};
    target_ = nullptr;
  }
  /// Any thread: the runner runs again (if it is armed).
  void notify() noexcept {
    fired_.store(true, std::memory_order_release);
    std::lock_guard<std::mutex> lock{mtx_};
    if (target_ == nullptr) return;
    // Pairs with the fence in the runner's release: it sees `fired_` (or its
    // mail), or we see it idle.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    target_->wake();
  }
  /// Whether notify() was called since the last take_fired().
  bool fired() const noexcept { return fired_.load(std::memory_order_acquire); }
  bool take_fired() noexcept { return fired_.exchange(false, std::memory_order_acq_rel); }

 private:
  std::mutex mtx_;
  runner_base* target_ = nullptr;
  std::atomic<bool> fired_{false};
};

}  // namespace troupe::detail
