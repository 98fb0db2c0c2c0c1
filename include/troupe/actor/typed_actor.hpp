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

/// The behavior of a typed actor: one handler per signature, in any order.
template <class... Sigs>
class typed_behavior {
 public:
  using handle_type = typed_actor<Sigs...>;

  template <class... Fs>
    requires(sizeof...(Fs) == sizeof...(Sigs))
  typed_behavior(Fs... fs) : bhvr_{make(std::tuple<Fs...>{std::move(fs)...})} {}

  /// The handlers, ordered like Sigs (index i handles signature i+1).
  behavior unbox() && { return std::move(bhvr_); }
  operator behavior() && { return std::move(bhvr_); }

 private:
  template <class Sig, class... Fs>
  static auto pick(std::tuple<Fs...>& fs) {
    using args = typename detail::signature<Sig>::args;
    constexpr auto i = detail::handler_for<args, Fs...>();
    static_assert(i < sizeof...(Fs), "a signature of the typed actor's interface has no handler");
    using F = std::tuple_element_t<i, std::tuple<Fs...>>;
    using R = typename detail::signature<Sig>::result;
    using got = typename detail::callable_traits<F>::result;
    static_assert(std::is_void_v<R> ? std::is_void_v<got> : std::is_convertible_v<got, R>,
                  "a handler's result type does not match its signature in the typed actor's interface");
    return std::get<i>(fs);
  }
  template <class... Fs>
  static behavior make(std::tuple<Fs...> fs) {
    return behavior{pick<Sigs>(fs)...};
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
