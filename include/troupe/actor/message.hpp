// message.hpp: how values travel between actors.
// A message is one heap node (from the pool) holding a std::tuple of the sent
// values, the sender's handle and a request id. Handlers are selected by the
// tuple's type identity, one pointer comparison per candidate handler.
// Use `message` (a view) in default handlers to inspect what was not handled.
// Cost: one pool allocation and the moves of the values per message; no locks.
#pragma once

#include <cstdint>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "troupe/actor/actor.hpp"
#include "troupe/detail/mpsc_queue.hpp"
#include "troupe/detail/pool.hpp"

namespace troupe {
namespace detail {

/// Releases a message's sender reference; on scheduler workers the releases
/// are batched per sender and flushed after each activation (flush_deferred).
void release_sender(actor_cell* c) noexcept;

/// One static object per distinct tuple of decayed types; its address is the
/// type's identity (stable across translation units).
template <class... Ts>
struct type_tag {
  static constexpr char id = 0;
};

template <class... Ts>
inline constexpr const void* type_id_of = &type_tag<std::decay_t<Ts>...>::id;

struct message_node;

/// Messages the runtime handles before the behavior (exit, down, ...).
template <class... Ts>
struct is_system_message : std::false_type {};

struct message_vtable {
  const void* type_id;
  void (*destroy)(message_node*) noexcept;
  const char* (*type_name)() noexcept;
  bool system;
};

/// Bit 63 of message_node::id marks a response; the rest is the request id.
inline constexpr std::uint64_t response_bit = std::uint64_t{1} << 63;

struct message_node : mpsc_node {
  const message_vtable* vt;
  actor sender;
  std::uint64_t id = 0;   // 0: plain message; request id; or response_bit|id
  std::uint32_t tag = 0;  // index of the signature in a typed interface
  /// The sender is the receiver itself (a self-send): its queued message
  /// keeps it alive, so `sender` holds no reference of its own.
  bool borrowed_sender = false;
  /// Its handler returned troupe::skip: the actor keeps it for later.
  bool skipped = false;

  bool is_request() const noexcept { return id != 0 && (id & response_bit) == 0; }
  bool is_response() const noexcept { return (id & response_bit) != 0; }
  template <class... Ts>
  bool holds() const noexcept {
    return vt->type_id == type_id_of<Ts...>;
  }
};

template <class... Ts>
struct payload_node final : message_node {
  std::tuple<Ts...> values;

  template <class... Us>
  explicit payload_node(Us&&... us) : values(std::forward<Us>(us)...) {}

  static void destroy(message_node* n) noexcept {
    auto* self = static_cast<payload_node*>(n);
    if (actor_cell* c = self->sender.detach(); c != nullptr && !self->borrowed_sender) release_sender(c);
    pool_delete(self);
  }
  static const char* name() noexcept { return typeid(std::tuple<Ts...>).name(); }
  static constexpr message_vtable vtable{&type_tag<Ts...>::id, &payload_node::destroy, &payload_node::name,
                                         is_system_message<Ts...>::value};
};

template <class... Ts>
// NOLINTNEXTLINE(performance-unnecessary-value-param): moved into the node
message_node* make_message(actor sender, std::uint64_t id, Ts&&... xs) {
  using node_type = payload_node<std::decay_t<Ts>...>;
  auto* n = pool_new<node_type>(std::forward<Ts>(xs)...);
  n->vt = &node_type::vtable;
  n->sender = std::move(sender);
  n->id = id;
  return n;
}

inline void destroy_message(message_node* n) noexcept { n->vt->destroy(n); }

template <class... Ts>
std::tuple<Ts...>& values_of(message_node& n) noexcept {
  return static_cast<payload_node<Ts...>&>(n).values;
}

struct message_deleter {
  void operator()(message_node* n) const noexcept { destroy_message(n); }
};

}  // namespace detail

/// Read-only view of a message, handed to default handlers.
class message {
 public:
  explicit message(detail::message_node& n) noexcept : node_{&n} {}

  /// true when the message holds exactly these (decayed) types, in order.
  template <class... Ts>
  bool match() const noexcept {
    return node_->holds<Ts...>();
  }
  /// The value (one type) or the tuple of values (several types);
  /// precondition: match<Ts...>().
  template <class... Ts>
  decltype(auto) get() const noexcept {
    if constexpr (sizeof...(Ts) == 1) return (std::get<0>(detail::values_of<Ts...>(*node_)));
    else return (detail::values_of<Ts...>(*node_));
  }
  const char* type_name() const noexcept { return node_->vt->type_name(); }
  const actor& sender() const noexcept { return node_->sender; }
  bool is_request() const noexcept { return node_->is_request(); }
  detail::message_node& node() const noexcept { return *node_; }

 private:
  detail::message_node* node_;
};

}  // namespace troupe
