// watermark.hpp: event time. A watermark w in a stream says that every
// element still to come has a time of at least w (the unit is the user's,
// the same as the time windows'). Time windows then close the windows of
// every key that end at or before it, and count elements older than it as
// late (stream/window.hpp).
//
// Generating them, at a source (or any node that knows its elements' times):
//   // periodic, with a bounded out-of-orderness: watermark = the largest time
//   // emitted so far - 50, after every 64 elements and every 200 ms
//   st::with_watermarks(st::source(read), &reading::time, {.out_of_orderness = 50})
//   // punctuated: the node says when
//   struct feed : st::node<void, reading> {
//     static constexpr bool emits_watermarks = true;
//     bool produce() { ...; send_next(r); if (minute_over) emit_watermark(minute_end); ... }
//   };
// Carrying them: every other node forwards its input watermark, the minimum
// over its input channels that have not ended (a farm replica waits for its
// slowest producer; a closed input no longer holds it back), after what it
// emitted until then; it sees it in watermark() and may act on it in
// on_watermark(w) (a sink that closes its own per-window state, say). A
// generator's outputs carry its own watermarks, not its input's. Watermarks
// never go backwards. Merges (after branches, farm into farm) take the
// minimum too: put generators before a split, or in every branch.
//
// When not to use: in-order input per key needs none (time windows close a
// key's windows with its next element). A graph without a generator pays
// nothing for them.
// Cost: nothing per element outside generators and time windows; per input
// channel, a load per batch of the runners watermarks can reach; a
// generator, a time read per element and a store (and fence) per
// watermark. A watermark applies when the consumer has taken the elements
// its channel held when the consumer saw it: it may apply a few elements
// later than it was sent (an element that a watermark would have made late
// may then still count), never earlier.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "troupe/stream/node.hpp"

namespace troupe::stream {

/// How with_watermarks generates them.
struct periodic_watermarks {
  std::uint64_t out_of_orderness = 0;  ///< watermark = the largest time emitted so far - this
  std::uint64_t every = 64;            ///< one after every this many elements (0: not by count)
  std::uint64_t every_ms = 200;        ///< and one at the first batch end this long after the last (0: not by time)
};

/// A node whose outputs carry periodic watermarks, computed from the times
/// of what it emits (see with_watermarks).
template <class N, class TimeFn>
class watermarked : public N {
 public:
  static constexpr bool emits_watermarks = true;
  using watermark_time_type = TimeFn;

  watermarked(N n, TimeFn time, periodic_watermarks p) : N{std::move(n)}, time_{std::move(time)}, policy_{p} {
    if (p.every == 0 && p.every_ms == 0)
      throw std::invalid_argument("with_watermarks: every and every_ms are both 0 (no watermark would be sent)");
  }

  const TimeFn& watermark_time() const noexcept { return time_; }
  const periodic_watermarks& watermark_policy() const noexcept { return policy_; }

 private:
  TimeFn time_;
  periodic_watermarks policy_;
};

/// `node` (a source, or any node that emits) with periodic watermarks from
/// `time(const Out&)` (a member pointer or a callable giving an unsigned
/// time): the largest time it has emitted minus p.out_of_orderness.
template <class N, class TimeFn>
auto with_watermarks(N node, TimeFn time, periodic_watermarks p = {}) {
  using out = typename N::out_type;
  static_assert(!std::is_void_v<out>, "troupe::stream::with_watermarks: a sink emits nothing to put watermarks after");
  static_assert(std::is_invocable_v<const TimeFn&, const out&>,
                "troupe::stream::with_watermarks: the time function must take the node's output type");
  return watermarked<N, TimeFn>{std::move(node), std::move(time), p};
}

/// What a time window's late_to(actor) receives for each late element.
template <class T>
struct late_element {
  T value;
  std::uint64_t watermark = 0;  ///< the window's input watermark (0: late for its key's time order)
};

}  // namespace troupe::stream
