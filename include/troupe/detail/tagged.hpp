// layer: stream
// tagged.hpp: the elements of actor-facing graphs and ordered farms.
//
// A graph that answers the actors who send it items (an entry and a last
// stage that emits) carries each element together with where its result goes
// (reply_to). An ordered farm carries each element with its position in the
// farm's input (seq) and whether it is the last output of that input (last);
// its reorder stage releases them in that order. Elsewhere channels hold the
// bare values: only these two uses pay for the tag.
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include "troupe/actor/error.hpp"
#include "troupe/actor/local_actor.hpp"
#include "troupe/detail/actor_cell.hpp"

namespace troupe::detail {

/// Where the results of one item go: its requester (one answer, through a
/// response promise), or an actor that takes every result as a plain message
/// (the sender of a plain send, or options.results_to). Empty: nowhere.
class reply_to {
 public:
  reply_to() = default;
  explicit reply_to(response_promise p) noexcept : promise_{std::move(p)} {}
  explicit reply_to(actor a) noexcept : to_{std::move(a)} {}

  /// Sends `v` on; false if nobody took it (no address, or the request was
  /// already answered), and then `v` is left as it was.
  template <class T>
  bool deliver(T&& v) {
    if (promise_.is_request() || !to_) return promise_.deliver(std::forward<T>(v));
    actor_cell::deliver(to_, make_message(actor{}, 0, std::forward<T>(v)));
    return true;
  }
  /// Reports a failed item to whoever awaits its result.
  void fail(const error& e) { deliver(error{e}); }
  /// Nobody awaits the results (the case of every graph from sources to sinks).
  bool empty() const noexcept { return !promise_.is_request() && !to_; }

 private:
  response_promise promise_;
  actor to_;
};

/// Outside an ordered farm, or emitted by a replica's on_start: no position.
inline constexpr std::uint64_t no_seq = ~std::uint64_t{0};
/// Emitted by a replica's on_stop: after every element with a position.
inline constexpr std::uint64_t at_end = no_seq - 1;

template <class T>
struct tagged {
  std::optional<T> value;  ///< empty: a marker (an ordered item that produced no output)
  reply_to reply;
  std::uint64_t seq = no_seq;  ///< position in an ordered farm's input (or no_seq, at_end)
  bool last = true;            ///< the last output of its input (ordered farms)
};

/// What a channel between two stages holds: T, or tagged<T> in actor-facing
/// graphs and ordered farms. void stays void (sources take, sinks emit nothing).
template <class T, bool Tagged>
struct wire_of {
  using type = std::conditional_t<Tagged, tagged<T>, T>;
};
template <bool Tagged>
struct wire_of<void, Tagged> {
  using type = void;
};
template <class T, bool Tagged>
using wire = typename wire_of<T, Tagged>::type;

template <class T>
struct is_tagged : std::false_type {};
template <class T>
struct is_tagged<tagged<T>> : std::true_type {};

/// The value a routing policy looks at. Precondition for tagged elements: not a marker.
template <class E>
const auto& routed_value(const E& e) noexcept {
  if constexpr (is_tagged<E>::value) return *e.value;
  else return e;
}

}  // namespace troupe::detail
