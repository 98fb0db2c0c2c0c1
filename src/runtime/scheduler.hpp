// Work-stealing scheduler (private to the library).
//
// Each worker owns three places for runnable work:
//  - a "next" slot for the actor it woke last: runs right after the current
//    one, cache-hot; other workers take it only if its owner is still in the
//    same activation a whole search round later (so a ping-pong pair or a
//    token ring stays on one core); filling it wakes nobody;
//  - a LIFO deque (Chase-Lev) for woken and spawned actors displaced from the
//    slot: the owner runs the newest first (depth-first, a small live set for
//    actor trees), thieves take the oldest (the biggest pieces of work);
//  - a FIFO ring for actors that used up their throughput and yielded, so
//    that yielding actors take turns fairly.
// Besides, a private list of actors held back (resume_result::held: a group
// publisher that overloads a subscriber), run again when their receiver has
// drained (checked every 16th pick, and continuously while the worker has
// nothing else to do) or, at the latest, after hold_max_us.
// Work from outside the workers (main thread, timers, detached actors) goes
// through a global queue.
// Idle workers spin according to the polling strategy (moderate: as long as
// spinning has recently paid off, see worker::search), then park on a futex;
// a producer wakes a parked worker only when nobody is searching for work and
// only for work others may take at once (global queue, deque, ring): the next
// slot is its owner's to run. So that an actor does not wait in the slot
// behind a long activation, a worker that parks while another is awake
// sleeps at most tuning::park_recheck_us and then looks again.
//
// Invariants of parking (TROUPE_ASSERT in debug and sanitizer builds):
//   P1 a worker is on the idle list at most once, and idle_ counts the list;
//   P2 searching_ counts the workers between leaving their work and parking
//      (never below zero); a woken worker comes back searching;
//   P3 a worker's wake flag is 0 (awake or about to sleep), 2 (asleep on
//      the futex: a waker must make the system call) or 1 (woken), set to 1
//      by the one waker that took it off the list (or by stop()), cleared by
//      the worker itself; a worker whose timed sleep ended takes itself off
//      the list under the lock, unless a waker did first (then its flag is
//      on the way).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "troupe/detail/resumable.hpp"
#include "troupe/detail/tuning.hpp"
#include "troupe/runtime/config.hpp"
#include "troupe/util/affinity.hpp"
#include "troupe/util/cache.hpp"

namespace troupe::detail {

class scheduler;

/// true when called on a worker whose own queues and the global queue are
/// empty, or on a thread that is not a worker (a detached actor's own thread).
bool worker_is_free() noexcept;
/// The scheduler whose worker is the calling thread, or nullptr.
scheduler* current_scheduler() noexcept;

class alignas(cache_line) worker {
  friend bool worker_is_free() noexcept;
  friend bool help_one() noexcept;
  friend scheduler* current_scheduler() noexcept;
  friend void announce_next_slow() noexcept;

 public:
  static constexpr std::uint64_t ring_size = tuning::worker_ring;

  worker(scheduler& s, std::size_t index);

  void run(const std::vector<int>& cores);
  void push_local(resumable* r) noexcept;  // owner only: the FIFO ring
  void push_lifo(resumable* r) noexcept;   // owner only: the LIFO deque
  void put_next(resumable* r) noexcept;    // owner only
  resumable* steal() noexcept;             // any thread: ring head
  resumable* steal_lifo() noexcept;        // any thread: deque top (oldest)
  resumable* steal_next(resumable* expected) noexcept;
  bool has_work() const noexcept;
  bool has_own_work() const noexcept;     // owner's view, relaxed
  bool has_queued_work() const noexcept;  // stealable: deque or ring, relaxed
  std::uint64_t activations() const noexcept { return activations_.load(std::memory_order_acquire); }

 private:
  friend class scheduler;
  resumable* pop_local() noexcept;
  resumable* pop_lifo() noexcept;   // owner only: deque bottom (newest)
  resumable* steal_any() noexcept;  // one pass over the other workers
  void run_one(resumable* r) noexcept;
  /// Adds what this thread's activations handled (handled_unpublished) to
  /// handled_, which other threads read.
  void publish_handled() noexcept {
    if (const auto n = std::exchange(handled_unpublished, 0); n != 0)
      handled_.store(handled_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  resumable* find_work() noexcept;
  resumable* search() noexcept;
  resumable* search_round() noexcept;  // one visit of the global queue and every victim
  bool park() noexcept;                // false: stop requested
  void announce() noexcept;            // work in our next slot: wake a parked worker if nobody searches

  scheduler* sched_;
  std::size_t index_;
  std::uint32_t tick_ = 0;
  std::uint32_t next_streak_ = 0;
  std::uint32_t since_flush_ = 0;  // activations since the last flush_deferred()
  std::uint64_t rng_ = 0x9e3779b97f4a7c15ULL;
  std::uint32_t spin_budget_;          // search rounds before parking (moderate adapts it)
  std::vector<resumable*> seen_next_;  // per victim: its next slot one round ago
  struct held_entry {
    resumable* r;
    std::chrono::steady_clock::time_point since;
  };
  std::vector<held_entry> held_;  // returned `held` (they flood a receiver), oldest first
  resumable* take_held(bool ready_only) noexcept;
  void hold(resumable* r) noexcept;
  resumable* wait_for_held() noexcept;    // out of other work, with actors held
  std::vector<std::uint64_t> seen_runs_;  // per victim: its activations one round ago

  static constexpr std::int64_t lifo_size = tuning::worker_deque;
  alignas(cache_line) std::atomic<std::int64_t> lifo_top_{0};     // thieves
  alignas(cache_line) std::atomic<std::int64_t> lifo_bottom_{0};  // owner
  std::atomic<resumable*> lifo_[lifo_size];

  alignas(cache_line) std::atomic<std::uint64_t> head_{0};  // consumers (owner + thieves)
  alignas(cache_line) std::atomic<std::uint64_t> tail_{0};  // owner
  std::atomic<resumable*> next_{nullptr};
  std::atomic<std::uint64_t> activations_{0};
  std::atomic<std::uint64_t> handled_{0};  // messages event actors handled here (publish_handled)
  alignas(cache_line) std::atomic<std::uint32_t> wake_flag_{0};
  std::atomic<resumable*> ring_[ring_size];
};

class scheduler {
  friend bool worker_is_free() noexcept;

 public:
  scheduler(std::size_t workers, polling p, std::size_t throughput, affinity aff);
  ~scheduler();

  void start();
  void stop() noexcept;

  /// Any thread: makes `r` runnable (inline: an event actor's wake-up is one
  /// thread-local test and the slot's exchange, no call).
  void schedule(resumable* r) noexcept;
  [[gnu::noinline]] void schedule_outside(resumable* r) noexcept;  // from a thread that is not one of our workers
  /// Any thread: a forked task; on one of our workers it goes to that
  /// worker's LIFO deque (run soon by the owner, stealable by others).
  void schedule_fork(resumable* r) noexcept;

  std::size_t worker_count() const noexcept { return workers_.size(); }
  std::size_t throughput() const noexcept { return throughput_; }
  /// Sum of completed activations; changes whenever any actor ran.
  std::uint64_t activations() const noexcept;
  /// Messages handled by event actors on the workers (a snapshot).
  std::uint64_t messages_handled() const noexcept;
  /// true when no queue holds work (a snapshot).
  bool queues_empty() const noexcept;

 private:
  friend class worker;
  void push_global(resumable* r) noexcept;
  resumable* pop_global() noexcept;
  void notify_if_needed() noexcept;
  void notify_from_worker() noexcept;
  void wake_one() noexcept;

  std::vector<std::unique_ptr<worker>> workers_;
  std::vector<std::thread> threads_;
  polling polling_;
  std::size_t throughput_;
  affinity affinity_;

  alignas(cache_line) std::atomic<std::size_t> global_size_{0};
  std::mutex global_mtx_;
  std::deque<resumable*> global_;

  alignas(cache_line) std::atomic<std::uint32_t> searching_{0};
  std::atomic<std::uint32_t> idle_{0};
  std::atomic<bool> stop_{false};
  std::mutex idle_mtx_;
  std::vector<worker*> idle_list_;
};

/// The worker whose thread this is, or nullptr.
extern thread_local constinit worker* current_worker;

inline void worker::put_next(resumable* r) noexcept {
  // The slot is ours to run right after the current activation: no wake-up
  // (one per message would keep a parked worker cycling through wake,
  // search and park on a sequential workload) unless the activation goes on
  // (announce_next). A displaced actor goes to the deque, which wakes a
  // parked worker if nobody searches.
  if (resumable* old = next_.exchange(r, std::memory_order_acq_rel)) {
    next_unannounced = false;
    push_lifo(old);
  } else {
    next_unannounced = true;
  }
}

inline void scheduler::schedule(resumable* r) noexcept {
  if (worker* w = current_worker; w != nullptr && w->sched_ == this) [[likely]] {
    w->put_next(r);
    return;
  }
  schedule_outside(r);
}

}  // namespace troupe::detail
