// behavior.hpp: a set of message handlers, selected by argument types.
//   behavior{ [](int x) { ... }, [](get_atom) { return 42; } }
// A handler takes the message's values (by value, const&, & or &&) and may
// return a value: it goes back to the requester (requests) or to the sender.
// A request whose handler returns void is answered with an empty message;
// a handler returning troupe::skip leaves the message for a later behavior.
// Cost: dispatch compares one pointer per handler, then one indirect call.
// Handlers are stored once; copying a behavior shares them.
#pragma once

#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/actor/message.hpp"

namespace troupe {

class actor_cell;
class response_promise;

/// Returned by a handler: "not now". The message stays with the actor, in
/// order, and is offered again once the behavior changes (become,
/// unbecome); a request is answered only when it is finally handled.
/// `self.set_default_handler(troupe::skip)` keeps unexpected messages so.
struct skip_t {};
inline constexpr skip_t skip{};

/// become(keep_behavior, b): b on top of the current behavior, which
/// unbecome() brings back.
struct keep_behavior_t {};
inline constexpr keep_behavior_t keep_behavior{};

namespace detail {

/// Whether F's parameters can be read off it: a function (pointer), or a
/// class with one call operator that is not a template. A handler's
/// parameter types say which messages it takes, so a generic lambda
/// (`auto` parameters) cannot be one.
template <class F>
concept concrete_callable =
    std::is_function_v<std::remove_pointer_t<std::decay_t<F>>> || requires { &std::decay_t<F>::operator(); };

template <class F>
struct callable_traits;
template <class F>
struct class_callable_traits {
  static_assert(concrete_callable<F>,
                "troupe: a message handler (or a stage's function) needs parameters of concrete types, which say "
                "what it takes; a generic lambda (auto parameters) or a class with several call operators cannot "
                "say that. Write one handler per message type: [](int x) {...}, [](const std::string& s) {...}");
  // What lets the code that reads these go on without more errors.
  using args = std::tuple<>;
  using decayed = std::tuple<>;
  using result = void;
};
template <class F>
  requires concrete_callable<F>
struct class_callable_traits<F> : callable_traits<decltype(&std::decay_t<F>::operator())> {};

template <class F>
struct callable_traits : class_callable_traits<F> {};
template <class R, class... As>
struct callable_traits<R (*)(As...)> {
  using result = R;
  using args = std::tuple<As...>;
  using decayed = std::tuple<std::decay_t<As>...>;
};
template <class C, class R, class... As>
struct callable_traits<R (C::*)(As...)> : callable_traits<R (*)(As...)> {};
template <class C, class R, class... As>
struct callable_traits<R (C::*)(As...) const> : callable_traits<R (*)(As...)> {};
template <class C, class R, class... As>
struct callable_traits<R (C::*)(As...) noexcept> : callable_traits<R (*)(As...)> {};
template <class C, class R, class... As>
struct callable_traits<R (C::*)(As...) const noexcept> : callable_traits<R (*)(As...)> {};

template <class Tuple>
struct tuple_type_id;
template <class... Ts>
struct tuple_type_id<std::tuple<Ts...>> {
  static constexpr const void* value = type_id_of<Ts...>;
};

/// Passes a stored value to a parameter of type P: lvalue for P&, else moved.
template <class P, class T>
decltype(auto) pass(T& value) {
  if constexpr (std::is_lvalue_reference_v<P>) return static_cast<P>(value);
  else return std::move(value);
}

template <class... Ps, class F, std::size_t... Is>
decltype(auto) invoke_impl(std::tuple<Ps...>*, F& f, message_node& n, std::index_sequence<Is...>) {
  auto& vals = static_cast<payload_node<std::decay_t<Ps>...>&>(n).values;
  return f(pass<Ps>(std::get<Is>(vals))...);
}

/// Calls `f` with the values of `n`, whose types must match F's parameters.
template <class F>
decltype(auto) invoke_with(F& f, message_node& n) {
  if constexpr (concrete_callable<F>) {
    using args = typename callable_traits<F>::args;
    return invoke_impl(static_cast<args*>(nullptr), f, n, std::make_index_sequence<std::tuple_size_v<args>>{});
  }  // else callable_traits has said why not
}

/// Sends a handler's result back: to the requester as a response, or to the
/// sender as an ordinary message; void answers a request with an empty message.
void reply_empty(actor_cell& self, message_node& request) noexcept;
template <class R>
void reply(actor_cell& self, message_node& in, R&& result);

class handler_base {
 public:
  explicit handler_base(const void* type_id) noexcept : type_id_{type_id} {}
  virtual ~handler_base() = default;
  virtual void invoke(actor_cell& self, message_node& n) = 0;
  const void* type_id() const noexcept { return type_id_; }

 private:
  const void* type_id_;
};

template <class F>
class handler final : public handler_base {
 public:
  explicit handler(F f) : handler_base(tuple_type_id<typename callable_traits<F>::decayed>::value), f_{std::move(f)} {}
  void invoke(actor_cell& self, message_node& n) override {
    using result = typename callable_traits<F>::result;
    if constexpr (std::is_void_v<result>) {
      invoke_with(f_, n);
      if (n.is_request()) reply_empty(self, n);  // a plain message needs no answer: no call
    } else {
      reply(self, n, invoke_with(f_, n));
    }
  }

 private:
  F f_;
};

}  // namespace detail

class behavior {
 public:
  behavior() = default;

  template <class... Fs>
    requires(sizeof...(Fs) > 0 && (!std::is_same_v<std::decay_t<Fs>, behavior> && ...))
  behavior(Fs... fs) : handlers_{std::make_shared<std::vector<std::unique_ptr<detail::handler_base>>>()} {
    handlers_->reserve(sizeof...(Fs));
    (handlers_->push_back(std::make_unique<detail::handler<Fs>>(std::move(fs))), ...);
  }

  bool empty() const noexcept { return !handlers_ || handlers_->empty(); }

  /// true if some handler takes messages of n's types.
  bool accepts(const detail::message_node& n) const noexcept {
    if (!handlers_) return false;
    for (auto& h : *handlers_)
      if (h->type_id() == n.vt->type_id) return true;
    return false;
  }

  /// Runs the first handler whose parameter types match; false if none does.
  bool invoke(actor_cell& self, detail::message_node& n) {
    if (!handlers_) return false;
    // Typed sends carry the handler's index: no search.
    if (n.tag != 0 && n.tag <= handlers_->size()) {
      auto& h = (*handlers_)[n.tag - 1];
      if (h->type_id() == n.vt->type_id) {
        h->invoke(self, n);
        return true;
      }
    }
    for (auto& h : *handlers_)
      if (h->type_id() == n.vt->type_id) {
        h->invoke(self, n);
        return true;
      }
    return false;
  }

 private:
  std::shared_ptr<std::vector<std::unique_ptr<detail::handler_base>>> handlers_;
};

}  // namespace troupe
