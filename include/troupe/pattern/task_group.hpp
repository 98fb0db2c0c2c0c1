// task_group.hpp: fork/join tasks on the actor system's work-stealing
// scheduler, the engine under divide & conquer and map.
//   troupe::task_group g{sys};
//   g.run([&] { left = solve(a); });
//   right = solve(b);
//   g.wait();   // helps run queued work while waiting; rethrows a task's exception
// Use it for short, CPU-bound pieces of one computation. Don't block inside a
// task (no receive, no I/O): tasks share the workers with actors.
// Cost: one pool allocation and one atomic increment/decrement per task; a
// forked task goes to the worker's LIFO deque (run next by the owner, stolen
// oldest-first by idle workers). wait() on a worker runs other queued work
// (tasks or actors) until the group is done; on any other thread it sleeps.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>

#include "troupe/actor/actor_system.hpp"
#include "troupe/detail/pool.hpp"
#include "troupe/detail/resumable.hpp"
#include "troupe/detail/system_access.hpp"
#include "troupe/util/cache.hpp"

namespace troupe {

class task_group {
 public:
  explicit task_group(actor_system& sys) : sys_{&sys}, state_{new state} {}
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;
  /// Waits for the tasks still running. An exception nobody asked for with
  /// wait() is not lost: it is counted (actor_system::failed_tasks) and
  /// written to stderr, as a posted task's is.
  ~task_group() {
    try {
      wait();
    } catch (...) {
      detail::system_access::report_task_failure(*sys_, std::current_exception());
    }
    state_->release();
  }

  /// Forks `f` as a task.
  template <class F>
  void run(F&& f) {
    auto* t = pool_new<task<std::decay_t<F>>>(*state_, std::forward<F>(f));
    state_->pending.fetch_add(1, std::memory_order_relaxed);
    state_->refs.fetch_add(1, std::memory_order_relaxed);
    detail::system_access::schedule_fork(*sys_, t);
  }

  /// Returns when every task has finished; rethrows the first exception a
  /// task threw.
  void wait() {
    auto& st = *state_;
    if (detail::on_worker_thread()) {
      unsigned idle = 0;
      while (st.pending.load(std::memory_order_acquire) != 0) {
        if (detail::help_one()) idle = 0;
        else spin_then_yield(idle);
      }
    } else {
      for (auto p = st.pending.load(std::memory_order_acquire); p != 0; p = st.pending.load(std::memory_order_acquire))
        st.pending.wait(p, std::memory_order_acquire);
    }
    if (st.failed.load(std::memory_order_acquire)) {
      std::exception_ptr e;
      {
        std::lock_guard<std::mutex> guard{st.mtx};
        e = std::exchange(st.error, nullptr);
        st.failed.store(false, std::memory_order_relaxed);
      }
      if (e) std::rethrow_exception(e);
    }
  }

  actor_system& system() const noexcept { return *sys_; }

 private:
  // Shared by the group and its tasks: a task that finishes last may still
  // be notifying while the group returns from wait(), so the state lives
  // until the last of them lets go.
  struct state {
    std::atomic<std::size_t> pending{0};
    std::atomic<std::size_t> refs{1};
    std::atomic<bool> failed{false};
    std::mutex mtx;
    std::exception_ptr error;

    void release() noexcept {
      if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
    void fail(std::exception_ptr e) noexcept {
      std::lock_guard<std::mutex> guard{mtx};
      if (!error) error = std::move(e);
      failed.store(true, std::memory_order_release);
    }
    void finish_one() noexcept {
      if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) pending.notify_all();
      release();
    }
  };

  template <class F>
  class task final : public detail::resumable {
   public:
    task(state& s, F f) : state_{&s}, f_{std::move(f)} {}
    detail::resume_result resume(std::size_t) override {
      auto* s = state_;
      try {
        f_();
      } catch (...) {
        s->fail(std::current_exception());
      }
      pool_delete(this);
      s->finish_one();
      return detail::resume_result::done;
    }

   private:
    state* state_;
    F f_;
  };

  actor_system* sys_;
  state* state_;
};

namespace detail {
template <class F>
class posted_task final : public resumable {
 public:
  posted_task(actor_system& sys, F f) : sys_{&sys}, f_{std::move(f)} {}
  resume_result resume(std::size_t) override {
    try {
      f_();
    } catch (...) {
      system_access::report_task_failure(*sys_, std::current_exception());
    }
    pool_delete(this);
    return resume_result::done;
  }

 private:
  actor_system* sys_;
  F f_;
};
}  // namespace detail

/// Runs `f` once on one of `sys`'s workers, without waiting for it (for work
/// that reports its result itself, e.g. through a response_promise).
/// An exception escaping `f` is not lost: it is counted
/// (actor_system::failed_tasks) and written to stderr; handle errors inside
/// `f` to report them your own way.
template <class F>
void post(actor_system& sys, F f) {
  detail::system_access::schedule_fork(sys, pool_new<detail::posted_task<std::decay_t<F>>>(sys, std::move(f)));
}

}  // namespace troupe
