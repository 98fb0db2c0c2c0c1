// layer: actor (ext: the seam for optional modules)
// messages.hpp: what a module needs to read, build and deliver actor messages
// without looking inside the core: a transport (troupe::net) takes mail from
// an owned_cell (owned_cell.hpp), reads who sent it, its request id, its type
// and its values, writes them out; on the other side it builds the same
// message again and delivers it to a local actor.
//   ext::mail m = cell->take();                  // owner of the cell
//   if (m.holds<std::int64_t>()) {
//     auto& [v] = m.values<std::int64_t>();
//     write(m.type(), m.id(), m.sender(), v);
//   }
//   ...on the other side:
//   ext::deliver(receiver, ext::make_mail(sender, id, std::int64_t{42}));
//   if (ext::is_request(id)) ext::respond(sender, id, error{errc::runtime_error, "no such type here"});
// The correlation word `id` travels as it is: 0 for a plain message, the
// request id for a request, response_bit | the request id for its response.
// A message's type is the identity of the tuple of its decayed value types
// (type_id_of<Ts...>): the same in every translation unit of one process,
// never across processes (name types for the wire yourself).
// Cost: ext::mail is one owning pointer; every function here is inline and
// does what the core does on its own paths (no copy, no extra allocation).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "troupe/actor/actor.hpp"
#include "troupe/actor/error.hpp"
#include "troupe/actor/message.hpp"
#include "troupe/actor/system_messages.hpp"
#include "troupe/actor/typed_actor.hpp"
#include "troupe/detail/actor_cell.hpp"

namespace troupe::detail {
std::string demangle(const char* mangled);  // src/stream/graph.cpp
}  // namespace troupe::detail

namespace troupe::ext {

/// A C++ type as the compiler writes it, from typeid(T).name() (the name as
/// given when it cannot be demangled): for messages about types.
inline std::string demangle(const char* mangled) { return detail::demangle(mangled); }

/// The identity of the message type holding exactly these (decayed) values.
template <class... Ts>
inline constexpr const void* type_id_of = detail::type_id_of<Ts...>;

/// Bit 63 of a correlation word: the message is a response.
inline constexpr std::uint64_t response_bit = detail::response_bit;
/// A request's correlation word (not 0, not a response).
constexpr bool is_request(std::uint64_t id) noexcept { return id != 0 && (id & response_bit) == 0; }
constexpr bool is_response(std::uint64_t id) noexcept { return (id & response_bit) != 0; }
/// The request id in a request's or a response's correlation word.
constexpr std::uint64_t request_of(std::uint64_t id) noexcept { return id & ~response_bit; }

/// The runtime's kill message (an exit for errc::kill): a transport that
/// carries the runtime's messages (down_msg, exit_msg) carries it too.
using kill_msg = detail::kill_msg;

class mail;
template <class... Ts>
[[nodiscard]] mail make_mail(actor sender, std::uint64_t id, Ts&&... xs);
inline void deliver(const actor& to, mail m, priority p = priority::normal) noexcept;
inline void deliver(actor_cell& to, mail m, priority p = priority::normal) noexcept;

/// One message, owned: destroying it destroys the message (and drops its
/// sender's reference).
class mail {
 public:
  mail() noexcept = default;

  explicit operator bool() const noexcept { return n_ != nullptr; }

  /// The type identity (compare with type_id_of<Ts...>).
  const void* type() const noexcept { return n_->vt->type_id; }
  /// The C++ name of the tuple of values (for error messages only).
  const char* type_name() const noexcept { return n_->vt->type_name(); }
  /// One of the runtime's own messages (down_msg, exit_msg, kill_msg, ...):
  /// delivered with priority::urgent.
  bool is_system() const noexcept { return n_->vt->system; }
  template <class... Ts>
  bool holds() const noexcept {
    return n_->holds<Ts...>();
  }
  /// The values; precondition: holds<Ts...>().
  template <class... Ts>
  std::tuple<Ts...>& values() const noexcept {
    return detail::values_of<Ts...>(*n_);
  }

  /// Who sent it (empty: anonymous).
  const actor& sender() const noexcept { return n_->sender; }
  /// The correlation word (see the top of this header).
  std::uint64_t id() const noexcept { return n_->id; }
  bool is_request() const noexcept { return n_->is_request(); }
  bool is_response() const noexcept { return n_->is_response(); }
  /// Which signature of a typed actor's interface it is for (0: untyped).
  std::uint32_t tag() const noexcept { return n_->tag; }
  void set_tag(std::uint32_t t) noexcept { n_->tag = t; }

  /// The read-only view that handlers see (valid while this mail lives).
  message view() const noexcept { return message{*n_}; }

 private:
  friend class owned_cell;
  template <class... Ts>
  friend mail make_mail(actor sender, std::uint64_t id, Ts&&... xs);
  friend void deliver(const actor& to, mail m, priority p) noexcept;
  friend void deliver(actor_cell& to, mail m, priority p) noexcept;

  explicit mail(detail::message_node* n) noexcept : n_{n} {}

  std::unique_ptr<detail::message_node, detail::message_deleter> n_;
};

/// A message from `sender` (empty: anonymous) with correlation word `id`
/// (0: a plain message) holding the decayed `xs`.
template <class... Ts>
// NOLINTNEXTLINE(performance-unnecessary-value-param): moved into the message
mail make_mail(actor sender, std::uint64_t id, Ts&&... xs) {
  return mail{detail::make_message(std::move(sender), id, std::forward<Ts>(xs)...)};
}

/// Any thread: hands `m` to `to`'s mailbox; an empty or ended `to` makes it a
/// dead letter (counted; a request gets an actor_exited error back).
inline void deliver(const actor& to, mail m, priority p) noexcept { actor_cell::deliver(to, m.n_.release(), p); }
/// The same, to an actor the caller knows to be alive without a handle (an
/// actor's own cell, or one whose end the caller waits for under a lock).
inline void deliver(actor_cell& to, mail m, priority p) noexcept { to.enqueue(m.n_.release(), p); }

/// Any thread: answers the request `id` of `requester` with `e` (a no-op when
/// `requester` is empty).
inline void respond(const actor& requester, std::uint64_t id, error e) noexcept {
  if (!requester) return;
  try {
    deliver(requester, make_mail(actor{}, response_bit | request_of(id), std::move(e)));
  } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory: the requester's timeout answers instead
  }
}

/// What a typed actor's interface says about one of its signatures:
/// `args` (a std::tuple of the decayed argument types) and `result`.
template <class Sig>
using signature_of = detail::signature<Sig>;

/// true for std::tuple<...> (a handler that answers with several values).
template <class T>
inline constexpr bool is_tuple_v = false;
template <class... Ts>
inline constexpr bool is_tuple_v<std::tuple<Ts...>> = true;

}  // namespace troupe::ext
