// event_actor.hpp: the ordinary actor. It runs on the scheduler's workers,
// never blocks a thread, and handles one message at a time with its current
// behavior. Spawn it from a function or lambda returning a behavior:
//   sys.spawn([](troupe::event_actor& self) { return troupe::behavior{...}; });
// or from a class deriving from event_actor and overriding make_behavior().
// Requests are asynchronous: request(...).then(on_value, on_error), or
// request(...).await(...) to handle nothing else until the response is in.
// Idioms (see docs/runtime.md): become(keep_behavior, b) / unbecome() for a
// behavior stack, a handler returning troupe::skip to leave a message for a
// later behavior, stateful_actor<State> for per-actor state of function
// actors, send_exit to stop another actor with a reason.
// Cost per message: one pool allocation, two atomic RMWs to enqueue, handler
// lookup by pointer comparison; an idle actor costs no thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>

#include "troupe/actor/local_actor.hpp"

namespace troupe {

class event_actor;
/// The `self` parameter of event-based actor functions.
using actor_ctx = event_actor;

namespace detail {

class scheduler;

class response_handler {
 public:
  virtual ~response_handler() = default;
  bool awaited = false;  ///< request(...).await: the actor handles little else meanwhile
  /// `n` is the response (values or an error).
  virtual void handle(event_actor& self, message_node& n) = 0;
  virtual void fail(event_actor& self, error e) = 0;
};

template <class F, class G>
class then_handler final : public response_handler {
 public:
  then_handler(F f, G g) : f_{std::move(f)}, g_{std::move(g)} {}
  void handle(event_actor& self, message_node& n) override;
  void fail(event_actor&, error e) override { g_(e); }

 private:
  F f_;
  G g_;
};

}  // namespace detail

/// An actor that can take only so much work at a time (a kernel actor with
/// its commands in flight) closes its intake: while open() is false the
/// actor takes only urgent messages, so normal ones stay in its mailbox,
/// where senders see them (send_if, the soft limit): backpressure as for
/// any busy actor. Such an actor must post an urgent message to itself
/// whenever open() may have turned true (a completion).
class intake_gate {
 public:
  /// Whether the actor takes normal messages now (its own thread only).
  virtual bool open() const noexcept = 0;
  /// The intake is closed and only normal messages are queued: the actor
  /// stops running (returning true) and whoever opens the gate must then
  /// schedule it again (resume_parked); false: it opened meanwhile, go on.
  virtual bool park() noexcept = 0;

 protected:
  ~intake_gate() = default;
};

class event_actor : public local_actor {
 public:
  class request_handle;

  event_actor();
  ~event_actor() override;

  /// Replaces the current behavior. An actor whose behavior is empty and
  /// that awaits no response ends normally. Safe inside a handler (the
  /// running handler lives until it returns). Skipped messages are offered
  /// to the new behavior first, in the order they came.
  void become(behavior b);
  /// Puts `b` on top of the current behavior, which unbecome() restores.
  void become(keep_behavior_t, behavior b);
  /// Back to the behavior under the current one; with none under it the
  /// behavior is empty (the actor ends unless it awaits a response).
  void unbecome();
  /// Ends the actor after the current handler returns.
  void quit(error reason = {}) {
    if (!quit_) quit_.emplace(std::move(reason));
  }

  /// Sends a request; the response (or an error: timeout, receiver gone,
  /// handler failed) goes to the handlers given to then().
  template <class... Ts>
  request_handle request(const actor& dest, std::chrono::nanoseconds timeout, Ts&&... xs);

  /// Request to a typed actor: only messages of its interface compile.
  template <class... Sigs, class... Ts>
    requires(!typed_actor<Sigs...>::template accepts<Ts...>)
  request_handle request(const typed_actor<Sigs...>& dest, std::chrono::nanoseconds timeout,
                         Ts&&... xs) = delete;  // not in the typed actor's interface
  template <class... Sigs, class... Ts>
    requires(typed_actor<Sigs...>::template accepts<Ts...>)
  request_handle request(const typed_actor<Sigs...>& dest, std::chrono::nanoseconds timeout, Ts&&... xs);

  /// Answer the current request later (see response_promise).
  response_promise make_response_promise();
  /// true while handling a request (someone awaits an answer).
  bool current_is_request() const noexcept { return current_ != nullptr && current_->is_request(); }

  /// exit_msg from linked actors goes here instead of ending this actor.
  void set_exit_handler(std::function<void(exit_msg&)> f) { hooks().exit = std::move(f); }
  /// down_msg from monitored actors; without a handler they are dropped.
  void set_down_handler(std::function<void(down_msg&)> f) { hooks().down = std::move(f); }
  /// Messages no handler accepts. Default: counted by the system
  /// (actor_system::unexpected_messages) and requests answered with an
  /// unexpected_message error.
  void set_default_handler(std::function<void(message&)> f) {
    hooks().fallback = std::move(f);
    hooks().skip_unexpected = false;
  }
  /// set_default_handler(troupe::skip): messages no handler accepts stay,
  /// in order, and are offered again when the behavior changes.
  void set_default_handler(skip_t) {
    hooks().fallback = nullptr;
    hooks().skip_unexpected = true;
  }
  /// Errors of requests whose then() gave no error handler. Default: the
  /// actor ends with that error.
  void set_error_handler(std::function<void(error&)> f) { hooks().on_error = std::move(f); }

  detail::resume_result resume(std::size_t throughput) override;
  bool held_back() const noexcept override;

 protected:
  /// Installs the intake gate (see intake_gate) before the first message;
  /// the actor's resume() must then call resume_gated().
  void set_intake_gate(intake_gate* g) noexcept { gate_ = g; }
  detail::resume_result resume_gated(std::size_t throughput);
  /// Runs a parked actor again (the thread that opened its gate).
  void resume_parked() noexcept { wake(); }

  /// The initial behavior; called once, on the actor's first activation.
  virtual behavior make_behavior() { return {}; }

  void wake() noexcept override;
  void on_exit() noexcept override;

 private:
  template <class F, class G>
  friend class detail::then_handler;

  struct hook_set {
    std::function<void(exit_msg&)> exit;
    std::function<void(down_msg&)> down;
    std::function<void(message&)> fallback;
    std::function<void(error&)> on_error;
    bool skip_unexpected = false;
  };
  // The behavior stack and the messages the actor keeps (skipped, or held
  // while it awaits a response); allocated by the first idiom that needs it.
  struct kept_state;
  kept_state& kept();
  hook_set& hooks() {
    if (!hooks_) hooks_ = std::make_unique<hook_set>();
    return *hooks_;
  }
  template <bool Gated>
  detail::resume_result run(std::size_t throughput);
  void dispatch(detail::message_node* n);
  bool wait_for_receiver() noexcept;
  void handle_system(detail::message_node& n);
  void handle_response(detail::message_node& n);
  void handle_unexpected(detail::message_node& n);
  void handle_request_error(error e);
  void register_request(std::uint64_t id, std::chrono::nanoseconds timeout);
  void mark_awaited(std::uint64_t id);
  bool alive_without_messages() const noexcept { return !bhvr_.empty() || (pending_ && !pending_->empty()); }
  /// While awaiting: whether `n` is handled now (awaited responses and their
  /// timeouts, exits and kills) or held until the awaits are over.
  bool passes_await(detail::message_node& n) const;
  /// After a handler, when kept_ exists: keeps a skipped message, frees a
  /// retired behavior, runs the held messages that may run now.
  void after_handler(detail::message_node* n, bool skipped);
  void note_skip() override;
  void behavior_changed();
  void retire_running_behavior();

  /// The system's scheduler: wake() puts the actor into the worker's next
  /// slot without going through actor_system (ping_pong: 4 instructions
  /// per message).
  detail::scheduler* sched_;
  behavior bhvr_;
  std::unique_ptr<kept_state> kept_;
  std::optional<error> quit_;
  bool initialized_ = false;
  bool recheck_alive_ = false;  // the behavior changed: dispatch asks alive_without_messages()
  intake_gate* gate_ = nullptr;
  std::unique_ptr<hook_set> hooks_;
  std::unique_ptr<std::unordered_map<std::uint64_t, std::unique_ptr<detail::response_handler>>> pending_;
};

/// An event actor with an intake gate (see intake_gate): it takes normal
/// messages only while open() says so. For modules (a kernel actor with its
/// commands in flight); plain event actors pay nothing for it.
class gated_actor : public event_actor, protected intake_gate {
 public:
  detail::resume_result resume(std::size_t throughput) override { return resume_gated(throughput); }

 protected:
  gated_actor() { set_intake_gate(this); }
};

class event_actor::request_handle {
 public:
  request_handle(event_actor& self, std::uint64_t id) : self_{&self}, id_{id} {}

  /// on_value takes the response's values; on_error takes error&.
  template <class F, class G>
  void then(F on_value, G on_error) {
    auto& slot = (*self_->pending_)[id_];
    slot = std::make_unique<detail::then_handler<F, G>>(std::move(on_value), std::move(on_error));
  }
  /// Errors go to the actor's error handler (default: the actor ends).
  template <class F>
  void then(F on_value) {
    auto* self = self_;
    then(std::move(on_value), [self](error& e) { self->handle_request_error(std::move(e)); });
  }
  /// Like then, but until the response (or its error) is in, the actor
  /// handles nothing else: other messages wait, in order, and run after it
  /// (CAF's await). Several awaits may be outstanding; their responses run
  /// as they come. Cost per held message: one deque push and pop.
  template <class F, class G>
  void await(F on_value, G on_error) {
    then(std::move(on_value), std::move(on_error));
    self_->mark_awaited(id_);
  }
  template <class F>
  void await(F on_value) {
    then(std::move(on_value));
    self_->mark_awaited(id_);
  }

 private:
  event_actor* self_;
  std::uint64_t id_;
};

template <class... Ts>
event_actor::request_handle event_actor::request(const actor& dest, std::chrono::nanoseconds timeout, Ts&&... xs) {
  auto id = new_request_id();
  register_request(id, timeout);
  deliver(dest, detail::make_message(handle(), id, std::forward<Ts>(xs)...));
  return request_handle{*this, id};
}

template <class... Sigs, class... Ts>
  requires(typed_actor<Sigs...>::template accepts<Ts...>)
event_actor::request_handle event_actor::request(const typed_actor<Sigs...>& dest, std::chrono::nanoseconds timeout,
                                                 Ts&&... xs) {
  auto id = new_request_id();
  register_request(id, timeout);
  deliver(dest.address(), detail::make_typed_message<typed_actor<Sigs...>>(handle(), id, std::forward<Ts>(xs)...));
  return request_handle{*this, id};
}

/// An event actor with state of its own, for actors written as functions
/// (CAF's stateful_actor):
///   struct tally { long total = 0; };
///   sys.spawn([](troupe::stateful_actor<tally>& self) {
///     return troupe::behavior{[&self](long n) { return self.state().total += n; }};
///   });
/// The state is value-initialised with the actor and destroyed when the actor
/// ends, so what it holds (handles of peers, promises) is let go then, not
/// when the last handle to the actor goes.
template <class State>
class stateful_actor : public event_actor {
 public:
  State& state() noexcept { return *state_; }
  const State& state() const noexcept { return *state_; }

 protected:
  void on_exit() noexcept override {
    event_actor::on_exit();
    state_.reset();
  }

 private:
  std::optional<State> state_{std::in_place};
};

template <class F, class G>
void detail::then_handler<F, G>::handle(event_actor&, message_node& n) {
  using decayed = typename callable_traits<F>::decayed;
  if (n.holds<error>()) {
    g_(std::get<0>(values_of<error>(n)));
  } else if (n.vt->type_id == tuple_type_id<decayed>::value) {
    invoke_with(f_, n);
  } else {
    error e{errc::unexpected_response, std::string{"response holds "} + n.vt->type_name()};
    g_(e);
  }
}

}  // namespace troupe
