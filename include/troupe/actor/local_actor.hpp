// local_actor.hpp: what every actor can do from inside its own code: send,
// send_if, delayed_send, reply addressing, links and monitors, groups.
// event_actor (runs on the scheduler) and blocking_actor (own thread,
// receive) build on it. Only the actor itself may call these members.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <tuple>
#include <type_traits>
#include <vector>

#include "troupe/actor/behavior.hpp"
#include "troupe/actor/system_messages.hpp"
#include "troupe/actor/typed_actor.hpp"
#include "troupe/detail/actor_cell.hpp"
#include "troupe/detail/semaphore.hpp"

namespace troupe {

class group;
class actor_system;

namespace detail {
struct group_state;
/// Set by actor_system::spawn while it constructs an actor object.
actor_system*& constructing_system() noexcept;
/// An exit_msg (a kill_msg for errc::kill) from `source` to `dest`, urgent.
void deliver_exit(actor source, const actor& dest, error reason);
/// Schedules delivery of `n` to `dest` after `delay` (timer thread).
void deliver_later(actor_system& sys, const actor& dest, message_node* n, std::chrono::nanoseconds delay, priority p);

template <class T>
struct is_tuple : std::false_type {};
template <class... Ts>
struct is_tuple<std::tuple<Ts...>> : std::true_type {};
}  // namespace detail

/// Infinite timeout for requests.
inline constexpr std::chrono::nanoseconds infinite{std::chrono::nanoseconds::max()};

class local_actor : public actor_cell {
  friend class actor_system;

 public:
  // --- sending ---
  /// Asynchronous send; FIFO per (sender, receiver) pair. A send to an actor
  /// that has ended is a dead letter (counted by the system).
  template <class... Ts>
  void send(const actor& dest, Ts&&... xs) {
    if (dest.get() == this) {  // self-send: no reference counting at all
      auto* n = detail::make_message(actor{this, false}, 0, std::forward<Ts>(xs)...);
      n->borrowed_sender = true;
      enqueue(n);
      return;
    }
    // In a handler (current_ is set), a second message in a row to one
    // receiver starts a chain (detail::send_group; while one waits, `prev`
    // is its receiver). Tested in this order, a send that does not chain
    // pays one compare and a store.
    auto& g = detail::tls_send_group;
    if (g.prev == dest.get() && current_ != nullptr && dest) [[unlikely]] {
      send_chained(dest, std::forward<Ts>(xs)...);
      return;
    }
    deliver(dest, detail::make_message(handle(), 0, std::forward<Ts>(xs)...));
    g.prev = dest.get();
    note_load(dest);
  }
  /// Send to a typed actor: only messages of its interface compile.
  template <class... Sigs, class... Ts>
    requires(!typed_actor<Sigs...>::template accepts<Ts...>)
  void send(const typed_actor<Sigs...>& dest, Ts&&... xs) = delete;  // not in the typed actor's interface
  template <class... Sigs, class... Ts>
    requires(typed_actor<Sigs...>::template accepts<Ts...>)
  void send(const typed_actor<Sigs...>& dest, Ts&&... xs) {
    deliver(dest.address(), detail::make_typed_message<typed_actor<Sigs...>>(handle(), 0, std::forward<Ts>(xs)...));
  }
  /// Like send, but jumps ahead of normal messages.
  template <class... Ts>
  void send_urgent(const actor& dest, Ts&&... xs) {
    deliver(dest, detail::make_message(handle(), 0, std::forward<Ts>(xs)...), priority::urgent);
  }
  /// Sends only if `dest` holds fewer than `limit` queued messages; returns
  /// whether it sent (the papers' send_next_if, for actors).
  template <class... Ts>
  [[nodiscard]] bool send_if(const actor& dest, std::size_t limit, Ts&&... xs) {
    if (!dest || dest->mailbox_size() >= limit) return false;
    return dest->enqueue_if(detail::make_message(handle(), 0, std::forward<Ts>(xs)...), limit);
  }
  /// Delivers after `delay` (timer thread); the receiver is kept alive until then.
  template <class Rep, class Period, class... Ts>
  void delayed_send(const actor& dest, std::chrono::duration<Rep, Period> delay, Ts&&... xs) {
    detail::deliver_later(system(), dest, detail::make_message(handle(), 0, std::forward<Ts>(xs)...),
                          std::chrono::duration_cast<std::chrono::nanoseconds>(delay), priority::normal);
  }
  /// Asks `dest` to end with `reason`: an exit_msg from this actor, which an
  /// actor with an exit handler may trap; without one, an error reason ends
  /// it (a normal one, errc::none, is ignored). errc::kill cannot be trapped.
  void send_exit(const actor& dest, error reason);
  template <class... Sigs>
  void send_exit(const typed_actor<Sigs...>& dest, error reason) {
    send_exit(dest.address(), std::move(reason));
  }
  /// Publishes a copy to every current subscriber of `g`.
  template <class... Ts>
  void send(const group& g, Ts&&... xs);

  /// The sender of the message being handled (empty for anonymous senders).
  const actor& sender() const noexcept { return current_ != nullptr ? current_->sender : no_actor_; }
  /// Handle to this actor (no reference count change; copy it to keep it).
  const actor& self() const noexcept { return self_; }

  // --- links and monitors ---
  void link_to(const actor& other);
  void unlink_from(const actor& other);
  void monitor(const actor& other);
  void demonitor(const actor& other);
  // Typed handles as they are (their address()).
  template <class... Sigs>
  void link_to(const typed_actor<Sigs...>& other) {
    link_to(other.address());
  }
  template <class... Sigs>
  void unlink_from(const typed_actor<Sigs...>& other) {
    unlink_from(other.address());
  }
  template <class... Sigs>
  void monitor(const typed_actor<Sigs...>& other) {
    monitor(other.address());
  }
  template <class... Sigs>
  void demonitor(const typed_actor<Sigs...>& other) {
    demonitor(other.address());
  }

  // --- groups ---
  void join(const group& g);
  void leave(const group& g);

  /// Spawns an event-based actor (see actor_system::spawn).
  template <class F, class... Args>
  auto spawn(F fun, Args&&... args);
  template <class A, class... Args>
  actor spawn(Args&&... args);

 protected:
  local_actor();
  ~local_actor() override;

  std::uint64_t new_request_id() noexcept { return ++last_request_id_; }

  /// Actors with a thread of their own (detached, blocking) sleep here while
  /// their mailbox is empty; wake() releases it.
  std::unique_ptr<detail::semaphore> sem_;
  detail::message_node* current_ = nullptr;

  /// Leaves joined groups, drops the overload notice.
  void on_exit() noexcept override;

  /// After a send: an overloaded receiver makes this actor yield after the
  /// current message (see config::mailbox_soft_limit).
  /// `hold`: a group publication; the actor is then held back until the
  /// receiver has drained (event_actor::resume), not only made to yield.
  void note_load(const actor& dest, bool hold = false) noexcept {
    if (dest && dest->mailbox_size() > soft_limit_ && !yield_) {
      yield_ = true;
      hold_ = hold;
      overloaded_ = dest;
    }
  }
  /// send() into the send group's chain; the message's sender reference is
  /// taken with the others' when the chain goes.
  template <class... Ts>
  [[gnu::noinline]] void send_chained(const actor& dest, Ts&&... xs) {
    auto* n = detail::make_message(actor{}, 0, std::forward<Ts>(xs)...);
    n->sender = actor{this, false};  // owed: taken when the chain goes
    auto& g = detail::tls_send_group;
    // (A chain left by an outer actor's handler, when a worker runs another
    // actor within it, has another owner: it goes first.)
    if (g.dest == dest.get() && g.owner == this) {
      g.last->next.store(n, std::memory_order_relaxed);
      g.last = n;
      ++g.owed;
      if (++g.count == detail::tuning::send_group_max) detail::flush_send_group();
      return;
    }
    detail::start_send_group(this, dest.get(), n);
    note_load(dest);
  }

  bool yield_ = false;
  bool hold_ = false;
  actor overloaded_;  // the receiver that made us yield
  std::size_t soft_limit_;

 private:
  std::uint64_t last_request_id_ = 0;
  actor self_{this, false};  // borrowed: released by ~local_actor without a count
  std::vector<std::shared_ptr<detail::group_state>> groups_;
  inline static const actor no_actor_{};
};

namespace detail {

template <class R>
void reply(actor_cell& self, message_node& in, R&& result) {
  using T = std::decay_t<R>;
  if constexpr (std::is_same_v<T, response_promise>) {
    return;  // answered later through the promise
  } else if constexpr (std::is_same_v<T, skip_t>) {
    in.skipped = true;  // the actor keeps it; answered when handled
    self.note_skip();
  } else {
    if (!in.sender) return;
    std::uint64_t id = in.is_request() ? (response_bit | in.id) : 0;
    message_node* out;
    if constexpr (is_tuple<T>::value)
      out = std::apply([&](auto&&... xs) { return make_message(self.handle(), id, std::forward<decltype(xs)>(xs)...); },
                       std::forward<R>(result));
    else out = make_message(self.handle(), id, std::forward<R>(result));
    actor_cell::deliver(in.sender, out);
  }
}

}  // namespace detail

/// Answers a request later (after asking another actor, say). Obtain with
/// make_response_promise() inside the handler; copies share one answer, and
/// the first deliver() sends it (copies may answer from different threads:
/// one atomic exchange decides). When the last copy goes away without an
/// answer, the requester gets an error, so it never waits forever.
class response_promise {
 public:
  response_promise() = default;
  response_promise(actor self, actor requester, std::uint64_t request_id)
      : state_{std::make_shared<state>(std::move(self), std::move(requester), request_id)} {}

  /// Someone awaits the answer and nobody has given it yet.
  bool pending() const noexcept { return state_ && !state_->answered.load(std::memory_order_acquire); }
  /// Whether the answer goes back as a response (false: the promise was made
  /// for a plain message and delivers to its sender as a plain message).
  bool is_request() const noexcept { return state_ && state_->id != 0; }

  /// Sends the answer; false if it had already been given (or nobody awaits it).
  template <class... Ts>
  bool deliver(Ts&&... xs) {
    if (!state_ || state_->answered.exchange(true, std::memory_order_acq_rel)) return false;
    auto& s = *state_;
    std::uint64_t id = s.id != 0 ? (detail::response_bit | s.id) : 0;
    auto* n = detail::make_message(std::move(s.self), id, std::forward<Ts>(xs)...);
    const actor to = std::move(s.requester);
    actor_cell::deliver(to, n);
    return true;
  }

 private:
  struct state {
    state(actor s, actor r, std::uint64_t i) : self{std::move(s)}, requester{std::move(r)}, id{i} {
      if (!requester) answered.store(true, std::memory_order_relaxed);  // nobody to answer
    }
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    ~state() {
      if (answered.load(std::memory_order_acquire)) return;
      std::uint64_t rid = id != 0 ? (detail::response_bit | id) : 0;
      try {
        actor_cell::deliver(
            requester, detail::make_message(std::move(self), rid,
                                            error{errc::runtime_error, "response promise dropped without an answer"}));
      } catch (...) {
        // Out of memory: the requester's timeout must do.
      }
    }
    actor self;
    actor requester;
    std::uint64_t id;
    std::atomic<bool> answered{false};
  };
  std::shared_ptr<state> state_;
};

}  // namespace troupe
