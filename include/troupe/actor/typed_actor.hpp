// typed_actor.hpp: actors whose message interface is part of their type.
//   using calculator = troupe::typed_actor<int(add_atom, int, int), void(reset_atom)>;
//   calculator c = sys.spawn([](troupe::event_actor&) -> calculator::behavior_type {
//     return {[](add_atom, int a, int b) { return a + b; }, [](reset_atom) {}};
//   });
//   self.send(c, add_atom{}, 1, 2);   // checked at compile time
//   self.send(c, "hello");            // does not compile: not in the interface
// Dispatch is static: the sender stamps each message with the index of its
// signature, and the receiver calls that handler directly (no type search).
// Cost: as an ordinary event actor, minus the handler lookup.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "troupe/actor/behavior.hpp"
#include "troupe/actor/message.hpp"

namespace troupe {

namespace detail {

template <class Sig>
struct signature;
template <class R, class... As>
struct signature<R(As...)> {
  using result = R;
  using args = std::tuple<std::decay_t<As>...>;
};

/// 1-based index of the signature taking exactly `Args`, or 0.
template <class Args, class... Sigs>
constexpr std::uint32_t signature_index() {
  std::uint32_t i = 0, found = 0;
  ((++i, found = (found == 0 && std::is_same_v<Args, typename signature<Sigs>::args>) ? i : found), ...);
  return found;
}

/// The handler (from Fs) whose decayed parameters are Args, as an index; sizeof...(Fs) if none.
template <class Args, class... Fs>
constexpr std::size_t handler_for() {
  std::size_t i = 0, found = sizeof...(Fs);
  ((found = (found == sizeof...(Fs) && std::is_same_v<Args, typename callable_traits<Fs>::decayed>) ? i : found, ++i),
   ...);
  return found;
}

}  // namespace detail

template <class... Sigs>
class typed_behavior;

/// Handle to a typed actor: only the messages of Sigs can be sent to it.
template <class... Sigs>
class typed_actor {
 public:
  using behavior_type = typed_behavior<Sigs...>;

  typed_actor() = default;
  explicit typed_actor(actor a) noexcept : addr_{std::move(a)} {}

  /// The untyped handle (for links, monitors, comparisons).
  const actor& address() const noexcept { return addr_; }
  explicit operator bool() const noexcept { return static_cast<bool>(addr_); }
  friend bool operator==(const typed_actor& a, const typed_actor& b) noexcept { return a.addr_ == b.addr_; }

  /// true when some signature takes exactly these (decayed) argument types.
  template <class... Ts>
  static constexpr bool accepts = detail::signature_index<std::tuple<std::decay_t<Ts>...>, Sigs...>() != 0;

  /// 1-based index of the signature that accepts these argument types.
  template <class... Ts>
  static constexpr std::uint32_t index_of() {
    constexpr auto i = detail::signature_index<std::tuple<std::decay_t<Ts>...>, Sigs...>();
    static_assert(i != 0, "this message type is not part of the typed actor's interface");
    return i;
  }

 private:
  actor addr_;
};

namespace detail {

template <class>
inline constexpr bool always_false = false;

template <std::size_t I, class T, class... Ts>
struct nth_type_impl : nth_type_impl<I - 1, Ts...> {};
template <class T, class... Ts>
struct nth_type_impl<0, T, Ts...> {
  using type = T;
};
/// The I-th (0-based) of Ts.
template <std::size_t I, class... Ts>
using nth_type = typename nth_type_impl<I, Ts...>::type;

// Diagnostics of typed_behavior: each names, in its instantiation note, what
// is wrong (see the value/diagnostic pairs in pattern/stage.hpp).
template <class Signature>
struct no_handler_for {
  static_assert(always_false<Signature>,
                "troupe::typed_behavior: no handler for this signature of the interface (see "
                "no_handler_for<Signature>): add a handler taking exactly its argument types");
};
template <class Arguments>
struct handler_outside_interface {
  static_assert(always_false<Arguments>,
                "troupe::typed_behavior: a handler takes argument types that no signature of the interface lists "
                "(see handler_outside_interface<std::tuple<Arguments...>>)");
};
template <class Signature, class Result>
struct handler_result_mismatch {
  static_assert(always_false<Signature>,
                "troupe::typed_behavior: a handler returns a type its signature does not (see "
                "handler_result_mismatch<Signature, Result>)");
};

/// Whether some signature of Sigs takes exactly `Args`.
template <class Args, class... Sigs>
inline constexpr bool in_interface = signature_index<Args, Sigs...>() != 0;

}  // namespace detail

/// The behavior of a typed actor: one handler per signature, in any order.
/// A handler missing, one too many, or one returning the wrong type is one
/// compile error that names the signature (or the handler's arguments).
template <class... Sigs>
class typed_behavior {
 public:
  using handle_type = typed_actor<Sigs...>;

  template <class... Fs>
    requires(sizeof...(Fs) > 0 && (!std::is_same_v<std::decay_t<Fs>, typed_behavior> && ...))
  typed_behavior(Fs... fs) : bhvr_{make(std::tuple<Fs...>{std::move(fs)...})} {}

  /// The handlers, ordered like Sigs (index i handles signature i+1).
  behavior unbox() && { return std::move(bhvr_); }
  operator behavior() && { return std::move(bhvr_); }

 private:
  template <class Sig, class... Fs>
  static constexpr bool handled = detail::handler_for<typename detail::signature<Sig>::args, Fs...>() < sizeof...(Fs);

  /// The handler of Sig returns what Sig says (true when it has none: that
  /// is reported as a missing handler).
  template <class Sig, class... Fs>
  static constexpr bool result_ok() {
    constexpr auto i = detail::handler_for<typename detail::signature<Sig>::args, Fs...>();
    if constexpr (i >= sizeof...(Fs)) {
      return true;
    } else {
      using R = typename detail::signature<Sig>::result;
      using got = typename detail::callable_traits<detail::nth_type<i, Fs...>>::result;
      return std::is_void_v<R> ? std::is_void_v<got> : std::is_convertible_v<got, R>;
    }
  }

  /// Index of the first false of Ok (sizeof...(Ok) if none).
  template <bool... Ok>
  static constexpr std::size_t first_false() {
    std::size_t i = 0, found = sizeof...(Ok);
    ((found = (found == sizeof...(Ok) && !Ok) ? i : found, ++i), ...);
    return found;
  }

  // The first broken rule, as indices (sizeof... when none is broken).
  template <class... Fs>
  static constexpr auto missing = first_false<handled<Sigs, Fs...>...>();
  template <class... Fs>
  static constexpr auto extra =
      first_false<detail::in_interface<typename detail::callable_traits<Fs>::decayed, Sigs...>...>();
  template <class... Fs>
  static constexpr auto wrong = first_false<result_ok<Sigs, Fs...>()...>();
  template <class... Fs>
  static constexpr bool well_formed =
      missing<Fs...> == sizeof...(Sigs) && extra<Fs...> == sizeof...(Fs) && wrong<Fs...> == sizeof...(Sigs);

  /// Instantiates the diagnostic of the first broken rule: exactly one
  /// compile error (the values above stay constant expressions, so nothing
  /// else fails after it).
  template <class... Fs>
  static void report() {
    if constexpr (missing<Fs...> < sizeof...(Sigs)) {
      (void)sizeof(detail::no_handler_for<detail::nth_type<missing<Fs...>, Sigs...>>);
    } else if constexpr (extra<Fs...> < sizeof...(Fs)) {
      using F = detail::nth_type<extra<Fs...>, Fs...>;
      (void)sizeof(detail::handler_outside_interface<typename detail::callable_traits<F>::decayed>);
    } else if constexpr (wrong<Fs...> < sizeof...(Sigs)) {
      using Sig = detail::nth_type<wrong<Fs...>, Sigs...>;
      using F = detail::nth_type<detail::handler_for<typename detail::signature<Sig>::args, Fs...>(), Fs...>;
      (void)sizeof(detail::handler_result_mismatch<Sig, typename detail::callable_traits<F>::result>);
    }
  }

  template <class Sig, class... Fs>
  static auto pick(std::tuple<Fs...>& fs) {
    return std::get<detail::handler_for<typename detail::signature<Sig>::args, Fs...>()>(fs);
  }
  template <class... Fs>
  static behavior make(std::tuple<Fs...> fs) {
    report<Fs...>();
    if constexpr (well_formed<Fs...>) return behavior{pick<Sigs>(fs)...};
    else return behavior{};
  }

  behavior bhvr_;
};

template <class T>
struct is_typed_behavior : std::false_type {};
template <class... Sigs>
struct is_typed_behavior<typed_behavior<Sigs...>> : std::true_type {};

namespace detail {
template <class Handle, class... Ts>
message_node* make_typed_message(actor sender, std::uint64_t id, Ts&&... xs) {
  constexpr auto index = Handle::template index_of<Ts...>();
  auto* n = make_message(std::move(sender), id, std::forward<Ts>(xs)...);
  n->tag = index;
  return n;
}
}  // namespace detail

}  // namespace troupe
