#include "timer.hpp"

namespace troupe::detail {

void timer::start() {
  thread_ = std::thread{[this] { run(); }};
}

void timer::stop() noexcept {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (stop_) return;
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // No lock needed: the thread is gone and add() refuses new tasks.
  while (!queue_.empty()) {
    std::unique_ptr<timer_task> t{queue_.top().task};
    queue_.pop();
    t->discard();
  }
}

void timer::add(clock::time_point when, std::unique_ptr<timer_task> task) {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!stop_) {
      bool earliest = queue_.empty() || when < queue_.top().when;
      queue_.push(entry{when, seq_++, task.release()});
      if (!earliest) return;
    }
  }
  if (task) {  // stopped: never runs
    task->discard();
    return;
  }
  cv_.notify_one();
}

std::size_t timer::pending() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return queue_.size();
}

void timer::run() {
  std::unique_lock<std::mutex> lock{mtx_};
  while (!stop_) {
    if (queue_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto when = queue_.top().when;
    if (clock::now() < when) {
      cv_.wait_until(lock, when);
      continue;
    }
    std::unique_ptr<timer_task> t{queue_.top().task};
    queue_.pop();
    lock.unlock();
    t->fire();
    t.reset();
    lock.lock();
  }
}

}  // namespace troupe::detail
