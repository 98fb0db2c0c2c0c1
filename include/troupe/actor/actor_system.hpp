// actor_system.hpp: owns the worker threads, the timer, the registry and the
// groups, and spawns actors. One per program is usual; several may coexist.
//   troupe::actor_system sys{troupe::config{.workers = 2}};
//   auto a = sys.spawn([](troupe::event_actor& self) { return troupe::behavior{...}; });
//   sys.send(a, 42);
// Shutdown (destructor or shutdown()): waits until no actor has work left
// (every queued message is handled), then stops the remaining idle actors
// with errc::system_shutdown, discards pending timers (counted as dead
// letters), and joins every thread. Blocking actors must return from their
// function (a kill makes their receive() throw) for shutdown to finish.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/actor/blocking_actor.hpp"
#include "troupe/actor/event_actor.hpp"
#include "troupe/actor/group.hpp"
#include "troupe/actor/registry.hpp"
#include "troupe/runtime/config.hpp"
#include "troupe/runtime/placement.hpp"
#include "troupe/util/affinity.hpp"

namespace troupe {

namespace detail {
class timer_task;
struct system_access;

/// The `self` an actor function takes: stateful_actor<S>& if its first
/// parameter is one, else event_actor& (also for generic lambdas).
template <class F, class = void>
struct self_of {
  using type = event_actor;
};
template <class S>
struct stateful_self : std::false_type {};
template <class S>
struct stateful_self<stateful_actor<S>&> : std::true_type {};
template <class F>
struct self_of<F, std::void_t<decltype(&F::operator())>> {
  using args = typename callable_traits<F>::args;
  using first = std::conditional_t<(std::tuple_size_v<args> > 0), std::tuple_element_t<0, args>, void>;
  using type = std::conditional_t<stateful_self<first>::value, std::remove_reference_t<first>, event_actor>;
};
template <class F>
using self_of_t = typename self_of<std::decay_t<F>>::type;

template <class Self, class F, class... Args>
class function_actor final : public Self {
 public:
  template <class G, class... Us>
  explicit function_actor(G&& f, Us&&... xs) : fun_{std::forward<G>(f)}, args_{std::forward<Us>(xs)...} {}

 protected:
  behavior make_behavior() override {
    using result = decltype(std::apply(fun_, std::tuple_cat(std::tuple<Self&>{*this}, args_)));
    if constexpr (std::is_void_v<result>) {
      std::apply(fun_, std::tuple_cat(std::tuple<Self&>{*this}, std::move(args_)));
      return {};
    } else {
      return std::apply(fun_, std::tuple_cat(std::tuple<Self&>{*this}, std::move(args_)));
    }
  }

 private:
  F fun_;
  std::tuple<Args...> args_;
};
}  // namespace detail

class actor_system {
 public:
  explicit actor_system(config cfg = config{});
  ~actor_system();
  actor_system(const actor_system&) = delete;
  actor_system& operator=(const actor_system&) = delete;

  const config& cfg() const noexcept;
  /// config::mailbox_soft_limit, read on every send between actors.
  std::size_t mailbox_soft_limit() const noexcept { return soft_limit_; }

  // --- spawning ---
  /// Event-based actor from a function `behavior f(event_actor&, Args...)`
  /// (or returning void and calling become()). A function returning a
  /// typed_behavior<Sigs...> yields a typed_actor<Sigs...> handle.
  /// A function whose first parameter is stateful_actor<State>& gets an
  /// actor with a State of its own (see stateful_actor).
  template <class F, class... Args>
    requires std::is_invocable_v<F&, detail::self_of_t<F>&, std::decay_t<Args>&...>
  auto spawn(F fun, Args&&... args) {
    using self_type = detail::self_of_t<F>;
    using result = std::invoke_result_t<F&, self_type&, std::decay_t<Args>&...>;
    actor a = launch(construct<detail::function_actor<self_type, F, std::decay_t<Args>...>>(
                         std::move(fun), std::forward<Args>(args)...),
                     false);
    if constexpr (is_typed_behavior<result>::value) return typename result::handle_type{std::move(a)};
    else return a;
  }
  /// Event-based actor from a class deriving from event_actor.
  template <class A, class... Args>
    requires std::is_base_of_v<event_actor, A>
  actor spawn(Args&&... args) {
    return launch(construct<A>(std::forward<Args>(args)...), false);
  }
  /// Event-based actor placed as `where` says: placement::pool() is spawn();
  /// placement::own_thread(cores) gives it a thread of its own, pinned to
  /// group i mod n of `cores` (i: the system's own-thread actors so far), or
  /// by config::detached_affinity when `cores` is empty. For actors that must
  /// not share a worker (a latency budget, a library call that blocks).
  /// A bad affinity string throws affinity_error.
  template <class F, class... Args>
    requires std::is_invocable_v<F&, detail::self_of_t<F>&, std::decay_t<Args>&...>
  actor spawn(const placement& where, F fun, Args&&... args) {
    auto cores = affinity::parse_for_machine(where.cores());  // throws before anything exists
    auto* a = construct<detail::function_actor<detail::self_of_t<F>, F, std::decay_t<Args>...>>(
        std::move(fun), std::forward<Args>(args)...);
    return launch(a, where.own_thread_each(), cores);
  }
  template <class A, class... Args>
    requires std::is_base_of_v<event_actor, A>
  actor spawn(const placement& where, Args&&... args) {
    auto cores = affinity::parse_for_machine(where.cores());
    auto* a = construct<A>(std::forward<Args>(args)...);
    return launch(a, where.own_thread_each(), cores);
  }
  /// spawn(placement::own_thread(), fun, args...).
  template <class F, class... Args>
    requires std::is_invocable_v<F&, detail::self_of_t<F>&, std::decay_t<Args>&...>
  actor spawn_detached(F fun, Args&&... args) {
    return spawn(placement::own_thread(), std::move(fun), std::forward<Args>(args)...);
  }
  template <class A, class... Args>
    requires std::is_base_of_v<event_actor, A>
  actor spawn_detached(Args&&... args) {
    return spawn<A>(placement::own_thread(), std::forward<Args>(args)...);
  }
  /// Blocking actor: runs `f(blocking_actor&, Args...)` on its own thread
  /// (pinned with the blocking affinity); it ends when f returns.
  template <class F, class... Args>
    requires std::is_invocable_v<F&, blocking_actor&, std::decay_t<Args>&...>
  actor spawn_blocking(F fun, Args&&... args) {
    auto* self = construct<blocking_actor>();
    std::function<void(blocking_actor&)> body =
        [fun = std::move(fun), tup = std::make_tuple(std::forward<Args>(args)...)](blocking_actor& b) mutable {
          std::apply([&](auto&... xs) { fun(b, xs...); }, tup);
        };
    return launch_blocking(self, std::move(body));
  }

  // --- messaging from outside any actor (anonymous sender) ---
  /// A send to an empty handle is counted as a dead letter.
  template <class... Ts>
  void send(const actor& dest, Ts&&... xs) {
    if (!dest) {
      count_dead_letter();
      return;
    }
    actor_cell::deliver(dest, detail::make_message(actor{}, 0, std::forward<Ts>(xs)...));
  }
  template <class... Sigs, class... Ts>
    requires(!typed_actor<Sigs...>::template accepts<Ts...>)
  void send(const typed_actor<Sigs...>& dest, Ts&&... xs) = delete;  // not in the typed actor's interface
  template <class... Sigs, class... Ts>
    requires(typed_actor<Sigs...>::template accepts<Ts...>)
  void send(const typed_actor<Sigs...>& dest, Ts&&... xs) {
    actor_cell::deliver(dest.address(),
                        detail::make_typed_message<typed_actor<Sigs...>>(actor{}, 0, std::forward<Ts>(xs)...));
  }
  /// Asks `dest` to end with `reason`, from outside any actor: an exit_msg
  /// without a source, which an exit handler may trap; without one an error
  /// reason ends the actor. errc::kill ends it whatever it does.
  ///   sys.send_exit(worker, troupe::error{troupe::errc::user_shutdown, "reconfigured"});
  void send_exit(const actor& dest, error reason) { detail::deliver_exit(actor{}, dest, std::move(reason)); }
  template <class... Sigs>
  void send_exit(const typed_actor<Sigs...>& dest, error reason) {
    detail::deliver_exit(actor{}, dest.address(), std::move(reason));
  }
  template <class Rep, class Period, class... Ts>
  void delayed_send(const actor& dest, std::chrono::duration<Rep, Period> delay, Ts&&... xs) {
    detail::deliver_later(*this, dest, detail::make_message(actor{}, 0, std::forward<Ts>(xs)...),
                          std::chrono::duration_cast<std::chrono::nanoseconds>(delay), priority::normal);
  }

  actor_registry& registry() noexcept;
  group_manager& groups() noexcept;

  /// Drains, stops idle actors and joins every thread; idempotent.
  void shutdown();

  // --- counters ---
  /// Messages that could not be delivered: receiver gone, or left in a
  /// mailbox when its actor ended, or a timer discarded at shutdown.
  std::uint64_t dead_letters() const noexcept;
  /// Messages no handler accepted (with the default default-handler).
  std::uint64_t unexpected_messages() const noexcept;
  /// Actors spawned by this system that have not ended yet.
  std::size_t live_actors() const noexcept;
  std::size_t worker_count() const noexcept;
  /// Messages event actors have handled so far (a snapshot; blocking
  /// actors' receives are not counted).
  std::uint64_t messages_handled() const noexcept;
  /// The mailbox length of every live actor now, in no order. For
  /// monitoring: it visits every actor, taking each shard's lock briefly.
  std::vector<std::size_t> mailbox_lengths() const;

  /// Exceptions that escaped functions run with troupe::post (each also
  /// written to stderr: a posted function should handle its own errors).
  std::uint64_t failed_tasks() const noexcept;

 private:
  friend struct detail::system_access;
  struct impl;

  // The runtime's own entry points (detail::system_access).
  void schedule(detail::resumable* r) noexcept;
  /// A forked task (task_group): the calling worker's LIFO deque, or the
  /// global queue from other threads.
  void schedule_fork(detail::resumable* r) noexcept;
  void add_timer(std::chrono::steady_clock::time_point when, std::unique_ptr<detail::timer_task> t);
  void count_dead_letter() noexcept;
  void count_unexpected() noexcept;
  void report_task_failure(std::exception_ptr e) noexcept;
  void remove_live(actor_cell* c) noexcept;
  /// Actors on their own threads report each handled message here, so that
  /// shutdown can tell when the whole system has gone quiet.
  void note_activity() noexcept;
  std::uint64_t next_actor_id() noexcept;

  template <class A, class... Args>
  A* construct(Args&&... args) {
    auto& slot = detail::constructing_system();
    auto* previous = std::exchange(slot, this);
    struct restore {
      actor_system*& s;
      actor_system* p;
      ~restore() { s = p; }
    } guard{slot, previous};
    return new A(std::forward<Args>(args)...);
  }
  /// `cores`: where the own thread runs (empty: config::detached_affinity).
  actor launch(event_actor* a, bool detached, const affinity& cores = {});
  actor launch_blocking(blocking_actor* a, std::function<void(blocking_actor&)> body);
  void add_live(actor_cell* c);

  std::unique_ptr<impl> impl_;
  std::size_t soft_limit_;
};

template <class F, class... Args>
auto local_actor::spawn(F fun, Args&&... args) {
  return system().spawn(std::move(fun), std::forward<Args>(args)...);
}
template <class A, class... Args>
actor local_actor::spawn(Args&&... args) {
  return system().template spawn<A>(std::forward<Args>(args)...);
}

}  // namespace troupe
