// layer: actor
// system_access.hpp: the actor system's entry points for troupe itself
// (scheduling, timers, counters); not for users.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <utility>

#include "troupe/actor/actor_system.hpp"

namespace troupe::detail {

class scheduler;

/// Work the actor system must see finish before it stops its workers (a
/// running stream graph): registered while it runs; at shutdown, after the
/// actors have ended, it gets tuning::shutdown_drain_ms to finish on its own,
/// then cancel_for_shutdown(), and the system waits until it has finished.
class shutdown_client {
 public:
  virtual void cancel_for_shutdown() noexcept = 0;

 protected:
  ~shutdown_client() = default;
};

struct system_access {
  static void schedule(actor_system& s, resumable* r) noexcept { s.schedule(r); }
  /// The system's scheduler (a class private to the library).
  static scheduler& scheduler_of(actor_system& s) noexcept;
  static void schedule_fork(actor_system& s, resumable* r) noexcept { s.schedule_fork(r); }
  static void add_timer(actor_system& s, std::chrono::steady_clock::time_point when, std::unique_ptr<timer_task> t);
  static void count_dead_letter(actor_system& s) noexcept { s.count_dead_letter(); }
  static void count_unexpected(actor_system& s) noexcept { s.count_unexpected(); }
  static void report_task_failure(actor_system& s, std::exception_ptr e) noexcept {
    s.report_task_failure(std::move(e));
  }
  static void remove_live(actor_system& s, actor_cell* c) noexcept { s.remove_live(c); }
  static void note_activity(actor_system& s) noexcept { s.note_activity(); }
  static void count_handled_off_pool(actor_system& s, std::size_t n) noexcept;
  static std::uint64_t next_actor_id(actor_system& s) noexcept { return s.next_actor_id(); }
  /// false: the system is shutting down and takes no more (cancel yourself).
  [[nodiscard]] static bool register_client(actor_system& s, shutdown_client* c);
  static void unregister_client(actor_system& s, shutdown_client* c) noexcept;
  template <class A, class... Args>
  static A* construct(actor_system& s, Args&&... args) {
    return s.template construct<A>(std::forward<Args>(args)...);
  }
};

}  // namespace troupe::detail
