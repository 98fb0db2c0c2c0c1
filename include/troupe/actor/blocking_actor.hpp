// blocking_actor.hpp: an actor with a thread of its own that pulls messages
// with receive(), like a mailbox you can wait on. Use it at the edges: the
// main thread (through scoped_actor), adapters to blocking I/O. Don't use it
// for many small actors: each one costs a thread.
//   self.receive([](int x) { ... });                    // waits for an int
//   bool got = self.receive_for(10ms, [](int x) { ... });
//   self.request(a, 1s, get_atom{}).receive([](int v) {...}, [](error& e) {...});
// Messages that the current receive does not accept stay queued, in order,
// for a later receive; so do down_msg (without a down handler), also while a
// request waits for its response. An exit_msg with an error from a linked
// actor (without an exit handler) or a kill throws actor_exited out of
// receive. A response that comes after its request gave up (timeout, or the
// request_handle dropped without receive) is a dead letter at once.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <stdexcept>
#include <unordered_set>
#include <utility>

#include "troupe/actor/local_actor.hpp"

namespace troupe {

/// Thrown out of receive() when the blocking actor must end.
class actor_exited : public std::runtime_error {
 public:
  explicit actor_exited(error reason)
      : std::runtime_error("actor exited: " + reason.to_string()), reason_{std::move(reason)} {}
  const error& reason() const noexcept { return reason_; }

 private:
  error reason_;
};

class blocking_actor : public local_actor {
 public:
  using clock = std::chrono::steady_clock;
  class request_handle;

  blocking_actor();
  ~blocking_actor() override;

  /// Waits until a message some handler accepts arrives, and handles it.
  template <class... Fs>
  void receive(Fs... fs) {
    behavior b{std::move(fs)...};
    receive_impl(b, std::nullopt);
  }
  /// Like receive, but gives up after `timeout`; returns whether it handled a message.
  template <class Rep, class Period, class... Fs>
  bool receive_for(std::chrono::duration<Rep, Period> timeout, Fs... fs) {
    behavior b{std::move(fs)...};
    return receive_impl(b, clock::now() + timeout);
  }

  template <class... Ts>
  request_handle request(const actor& dest, std::chrono::nanoseconds timeout, Ts&&... xs);

  template <class... Sigs, class... Ts>
    requires(!typed_actor<Sigs...>::template accepts<Ts...>)
  request_handle request(const typed_actor<Sigs...>& dest, std::chrono::nanoseconds timeout,
                         Ts&&... xs) = delete;  // not in the typed actor's interface
  template <class... Sigs, class... Ts>
    requires(typed_actor<Sigs...>::template accepts<Ts...>)
  request_handle request(const typed_actor<Sigs...>& dest, std::chrono::nanoseconds timeout, Ts&&... xs);

  /// exit_msg from linked actors goes here instead of ending this actor.
  void set_exit_handler(std::function<void(exit_msg&)> f) { exit_handler_ = std::move(f); }
  /// down_msg from monitored actors; without a handler they wait in the
  /// mailbox for a receive that takes down_msg.
  void set_down_handler(std::function<void(down_msg&)> f) { down_handler_ = std::move(f); }

  /// Ends the actor now (used by scoped_actor and the thread wrapper).
  void finish(const error& reason) noexcept;

  detail::resume_result resume(std::size_t) override { return detail::resume_result::done; }

 protected:
  void wake() noexcept override;

 private:
  friend class request_handle;
  /// Next message from the stash or the mailbox; nullptr at the deadline.
  bool receive_impl(behavior& b, std::optional<clock::time_point> deadline);
  /// Waits for the response to request `id`; nullptr at the deadline.
  detail::message_node* await_response(std::uint64_t id, std::optional<clock::time_point> deadline);
  detail::message_node* next_from_mailbox(std::optional<clock::time_point> deadline);
  /// Deals with a system message; false if it waits for a receive instead.
  bool handle_system(detail::message_node& n);
  /// handle_system, then destroys `n` unless it must wait (then false).
  bool system_message(detail::message_node* n);
  /// A message no receive wants now: kept for a later one, or, if it is a
  /// response nobody awaits any longer, counted as a dead letter.
  void keep(detail::message_node* n);
  /// The request gave up on its response (timeout or handle dropped).
  void forget_request(std::uint64_t id) noexcept;

  std::deque<detail::message_node*> stash_;
  std::unordered_set<std::uint64_t> awaited_;  // requests whose response someone may still receive
  std::size_t consumed_ = 0;
  bool finished_ = false;
  std::function<void(exit_msg&)> exit_handler_;
  std::function<void(down_msg&)> down_handler_;
};

class blocking_actor::request_handle {
 public:
  request_handle(blocking_actor& self, std::uint64_t id, std::chrono::nanoseconds timeout)
      : self_{&self}, id_{id}, timeout_{timeout} {}
  request_handle(request_handle&& other) noexcept
      : self_{std::exchange(other.self_, nullptr)}, id_{other.id_}, timeout_{other.timeout_} {}
  request_handle(const request_handle&) = delete;
  request_handle& operator=(const request_handle&) = delete;
  request_handle& operator=(request_handle&&) = delete;
  /// A handle dropped without receive: its response will be a dead letter.
  ~request_handle() {
    if (self_ != nullptr) self_->forget_request(id_);
  }

  /// Waits for the response: on_value gets its values, on_error an error&
  /// (timeout, receiver gone, handler failed, unexpected types).
  template <class F, class G>
  void receive(F on_value, G on_error) {
    std::optional<clock::time_point> deadline;
    if (timeout_ != infinite) deadline = clock::now() + timeout_;
    auto* n = std::exchange(self_, nullptr)->await_response(id_, deadline);
    if (n == nullptr) {
      error e{errc::request_timeout, "no response within the request's timeout"};
      on_error(e);
      return;
    }
    std::unique_ptr<detail::message_node, detail::message_deleter> guard{n};
    using decayed = typename detail::callable_traits<F>::decayed;
    if (n->holds<error>()) {
      on_error(std::get<0>(detail::values_of<error>(*n)));
    } else if (n->vt->type_id == detail::tuple_type_id<decayed>::value) {
      detail::invoke_with(on_value, *n);
    } else {
      error e{errc::unexpected_response, std::string{"response holds "} + n->vt->type_name()};
      on_error(e);
    }
  }

 private:
  blocking_actor* self_;
  std::uint64_t id_;
  std::chrono::nanoseconds timeout_;
};

template <class... Ts>
blocking_actor::request_handle blocking_actor::request(const actor& dest, std::chrono::nanoseconds timeout,
                                                       Ts&&... xs) {
  auto id = new_request_id();
  awaited_.insert(id);
  deliver(dest, detail::make_message(handle(), id, std::forward<Ts>(xs)...));
  return request_handle{*this, id, timeout};
}

template <class... Sigs, class... Ts>
  requires(typed_actor<Sigs...>::template accepts<Ts...>)
blocking_actor::request_handle blocking_actor::request(const typed_actor<Sigs...>& dest,
                                                       std::chrono::nanoseconds timeout, Ts&&... xs) {
  auto id = new_request_id();
  awaited_.insert(id);
  deliver(dest.address(), detail::make_typed_message<typed_actor<Sigs...>>(handle(), id, std::forward<Ts>(xs)...));
  return request_handle{*this, id, timeout};
}

}  // namespace troupe
