// layer: stream
// outlet.hpp: the producer side of a runner: its channels into the next
// stage's replicas, the routing policy that picks among them, and the
// overflow where elements wait while their channel is full.
//
// A node emits through an emit_target<T>: its outlet when the graph carries
// bare values, or the runner's tagging adapter (runner.hpp) in actor-facing
// graphs and ordered farms. The common case, one channel and nothing parked,
// is inline in emit_target::send (no call); every other case is one virtual
// call into outlet<E, Route>, where the policy's pick() is a direct call on
// a concrete type: no std::function, no shared counter.
// Watermarks go beside the elements: watermark(w) publishes what was pushed,
// then stores w in every channel (channel.hpp, C5), or, while elements are
// parked, once flush() has pushed them.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/detail/assert.hpp"
#include "troupe/detail/channel.hpp"
#include "troupe/detail/tagged.hpp"
#include "troupe/detail/tuning.hpp"

namespace troupe::detail {

/// What a node emits into.
template <class T>
class emit_target {
 public:
  /// Pushes `v` (or parks it when its channel is full). Order per channel is
  /// kept. Always inline: it is every node's per-element path, and GCC's
  /// heuristics dropped it out of line once the code around a source's loop
  /// grew (pipeline3: 99.8 -> 118.8 instructions per tuple).
  /// The common case is a store into the one channel's window (spsc_ring):
  /// no test of room, wrap or publish group, which only a push at the
  /// window's end needs.
  [[gnu::always_inline]] void send(T&& v) {
    if (in_window(*win_, v)) [[likely]] {
      // Counted by the ring's index (counts_by_index), or here; nothing
      // was published: C9 holds.
      if constexpr (!counts_by_index) sent_ += counted(v);
      return;
    }
    if constexpr (std::is_trivially_copyable_v<T> && sizeof(T) <= 64) {
      // A copy for the call: v itself then needs no address, and the fast
      // path stores it into the window from registers (pipeline3's 24-byte
      // tuple: 4 instructions fewer per element).
      T copy = v;
      send_routed(std::move(copy));
    } else {
      send_routed(std::move(v));
    }
  }
  /// Everything but a push into the window: the window's end (one push in
  /// a publish group), a full channel, routing, parking; a chain's next
  /// node.
  virtual void send_routed(T&& v) = 0;
  /// Pushes `v` only if its channel (round robin, random: any channel;
  /// broadcast: every channel) holds fewer than `limit` elements; `v` is
  /// moved from only when it was sent.
  [[nodiscard]] virtual bool send_if(T& v, std::size_t limit) = 0;
  /// A copy to every channel (every replica of every branch), whatever the
  /// policy: punctuations such as watermarks.
  virtual void send_all(T&& v) = 0;
  /// Watermark `w` after everything sent so far, on every channel (every
  /// replica of every branch): stored once those elements are in their
  /// channels (channel.hpp, C5). Values not above the last one are ignored.
  virtual void watermark(std::uint64_t w) = 0;

  /// Elements sent since the last call.
  std::uint64_t take_sent() noexcept {
    settle();
    return std::exchange(sent_, 0);
  }
  /// Where a park cuts the producing runner's count of elements left (a
  /// source's batch, a consumer's run; runner.hpp) to the one in progress:
  /// its loop tests that one count instead of the count and the parked flag.
  void halt_into(std::size_t* left) noexcept { halt_ = left; }
  /// Before its pushes become visible, the outlet stores `c`'s items out
  /// (c.total + what `by` has sent since its last take_sent; channel.hpp, C9).
  void count_into(emitted_count* c, const emit_target* by) noexcept {
    count_ = c;
    counted_by_ = by;
  }

 protected:
  emit_target() = default;
  emit_target(const emit_target&) = delete;
  emit_target& operator=(const emit_target&) = delete;
  ~emit_target() = default;

  /// Into channel c; false (v untouched) when full. Pushes are published
  /// (made visible, and an idle consumer woken) in groups (the ring's
  /// publish group, set by the producing outlet),
  /// when the channel is full, and at every batch end, block, pause or close
  /// of the producer (sweep, close): an element waits at most for its
  /// producer's next few pushes, and a consumer that polls an almost empty
  /// channel pulls its index once per group instead of once per element.
  [[gnu::always_inline]] bool push(channel<T>& c, T&& v) {
    return in_window(c.ring.producer_window(), v) || push_at_window_end(c, v);
  }
  /// A push into the window, if it has room: a store, no publish (R4).
  [[gnu::always_inline]] static bool in_window(typename spsc_ring<T>::window& w, T& v) {
    if (w.cur == w.end) return false;
    ::new (static_cast<void*>(w.cur)) T(std::move(v));
    ++w.cur;
    return true;
  }
  bool push_at_window_end(channel<T>& c, T& v) {
    auto& r = c.ring;
    const auto t = r.place_at_window_end(std::move(v));
    if (t == 0) {
      publish(c);  // full: the consumer must see what it holds
      return false;
    }
    if (r.group_due_at(t)) publish_pushes(c, t);
    return true;
  }
  void publish(channel<T>& c) noexcept {
    if (c.ring.unpublished() != 0) publish_pushes(c);
  }
  /// Makes c's pushes (there are some) visible, after the items out that
  /// count them (C9; the ring's release store covers both).
  void publish_pushes(channel<T>& c) noexcept { publish_pushes(c, c.ring.pushed_total()); }
  /// publish_pushes where `t` is c's ring's producer index.
  void publish_pushes(channel<T>& c, std::size_t t) noexcept {
    const auto sent = counted_by_ == this ? sent_at(t) : counted_by_->sent_so_far();
    count_->shown.store(count_->total + sent, std::memory_order_relaxed);
    c.ring.publish_to(t);
    if (!c.consumer->active()) c.consumer->wake();
  }
  /// 1, or 0 for a marker: an ordered input that produced nothing counts on
  /// neither side (channel.hpp, C9).
  static std::uint64_t counted(const T& v) noexcept {
    if constexpr (is_tagged<T>::value) return v.value.has_value() ? 1 : 0;
    else return 1;
  }
  /// While fast_ is set (one channel, nothing parked), every push into it
  /// is one element sent, so its ring's producer index counts them: sent_
  /// adds the pushes since mark_ when read (settle), and the per-element
  /// path has no add. Not for tagged elements, whose markers count as none.
  static constexpr bool counts_by_index = !is_tagged<T>::value;
  /// What an explicit count adds for `v`: 0 for a push into the one
  /// channel, which counts itself.
  std::uint64_t to_count(const T& v) const noexcept {
    if constexpr (counts_by_index)
      if (fast_ != nullptr) return 0;
    return counted(v);
  }
  /// sent_ with the one channel's pushes since mark_.
  std::uint64_t sent_so_far() const noexcept { return sent_at(fast_ != nullptr ? fast_->ring.pushed_total() : 0); }
  /// sent_so_far() where `t` is the one channel's producer index (if set).
  std::uint64_t sent_at(std::size_t t) const noexcept {
    if constexpr (counts_by_index)
      if (fast_ != nullptr) return sent_ + (t - mark_);
    return sent_;
  }
  /// Folds the one channel's pushes since mark_ into sent_.
  void settle() noexcept {
    if constexpr (counts_by_index) {
      if (fast_ == nullptr) return;
      const auto t = fast_->ring.pushed_total();
      sent_ = sent_at(t);
      mark_ = t;
    }
  }
  /// The one channel, or none (routed or parked): where send()'s window is.
  void set_fast(channel<T>* c) noexcept {
    settle();
    fast_ = c;
    win_ = c != nullptr ? &c->ring.producer_window() : &no_window_;
    if (c != nullptr) mark_ = c->ring.pushed_total();
  }
  /// Something is parked: the producing source's loop stops after the
  /// element in progress (halt_into).
  void halt() noexcept { *halt_ = 1; }
  channel<T>* fast_ = nullptr;                        ///< the one channel, while nothing is parked (else null)
  typename spsc_ring<T>::window no_window_;           ///< empty: every send takes the slow path
  typename spsc_ring<T>::window* win_ = &no_window_;  ///< fast_'s ring's window (set_fast)
  std::uint64_t sent_ = 0;
  std::uint64_t mark_ = 0;                ///< fast_'s ring's pushed_total when sent_ last counted it (settle)
  emitted_count* count_ = &uncounted_;    ///< the producing runner's items out
  const emit_target* counted_by_ = this;  ///< whose sent_ they add (a fanout's parts: the fanout's)
  emitted_count uncounted_;               ///< where an entry actor's outlet stores them (no one reads it)
  std::size_t own_left_ = 0;              ///< halt_'s target until halt_into (no source reads it)
  std::size_t* halt_ = &own_left_;
};

/// A stage's input as seen by the stage before it: its replicas' ports and
/// the policy that picks among them.
template <class E, class Route>
struct downstream {
  using element = E;
  std::vector<port<E>*> ports;
  Route route;
};

/// stream::branches: every element to each part, each with its own routing.
template <class E, class... Parts>
struct fanout {
  using element = E;
  std::tuple<Parts...> parts;
};

/// After a sink: nothing.
struct no_downstream {
  using element = void;
};

/// The route of a single consumer (a stage of one replica).
struct direct {
  template <class T>
  std::size_t pick(const T&, std::size_t) const noexcept {
    return 0;
  }
};

template <class Route>
concept broadcasting = requires { requires Route::to_every_replica; };
template <class Route>
concept any_replica_route = requires { requires Route::any_replica; };
template <class Route, class T>
concept load_aware_route = requires(Route& r, const T& v, std::size_t (*queued)(std::size_t)) {
  { r.pick(v, std::size_t{1}, queued) } -> std::convertible_to<std::size_t>;
};

inline constexpr std::size_t any_channel = SIZE_MAX;  ///< parked for "any channel with room"

template <class E, class Route>
class outlet final : public emit_target<E> {
  using base = emit_target<E>;

 public:
  outlet() = default;

  /// `self`: the producing runner (null for an entry actor).
  void attach(const downstream<E, Route>& d, std::size_t capacity, runner_base* self) {
    if (d.ports.empty()) throw std::logic_error("troupe stream: a stage has no downstream replica");
    if (self != nullptr) this->count_into(&self->emitted(), this);
    for (auto* p : d.ports) {
      chans_.push_back(p->connect(capacity, self));
      // A runner publishes its pushes in groups (see push); an entry actor
      // publishes each one at once.
      auto& ring = chans_.back()->ring;
      ring.set_publish_group(self == nullptr ? 1
                                             : std::clamp<std::size_t>(ring.capacity() / 4, 1, tuning::publish_group));
    }
    route_.emplace(d.route);
    refresh_fast();
  }

  void send_routed(E&& v) override {
    if (this->fast_ != nullptr) {  // the one channel's window is used up
      // Counted before the push, which may publish (C9).
      const auto k = this->to_count(v);
      this->sent_ += k;
      if (this->push_at_window_end(*this->fast_, v)) return;
      this->sent_ += this->counted(v) - k;  // full: parked, counted here
      return park(parked_index(v), std::move(v));
    }
    this->sent_ += this->counted(v);
    if (parked_) return park(parked_index(v), std::move(v));
    const std::size_t n = chans_.size();
    if constexpr (broadcasting<Route>) {
      for (std::size_t i = 0; i + 1 < n; ++i) push_or_park(i, E{v});
      push_or_park(n - 1, std::move(v));
    } else if (is_marker(v)) {
      push_or_park(0, std::move(v));  // markers only travel on single-replica routes (see tagged.hpp)
    } else if constexpr (any_replica_route<Route>) {
      if (!in_turn(route_->pick(routed_value(v), n),
                   [&](std::size_t i) { return this->push(*chans_[i], std::move(v)); }))
        park(any_channel, std::move(v));
    } else {
      push_or_park(pick(v), std::move(v));
    }
  }

  bool send_if(E& v, std::size_t limit) override {
    if (parked_) return false;
    auto room = [&](std::size_t i) { return chans_[i]->ring.pushed_size() < limit; };
    auto push_v = [&](std::size_t i) {
      const auto n = this->to_count(v);
      this->sent_ += n;  // before the push, which may publish (C9)
      if (this->push(*chans_[i], std::move(v))) return true;
      this->sent_ -= n;
      return false;
    };
    if constexpr (broadcasting<Route>) {
      if (!would_take(v, limit)) return false;
      send_routed(std::move(v));
      return true;
    } else if constexpr (any_replica_route<Route> ||
                         load_aware_route<Route, std::remove_cvref_t<decltype(routed_value(v))>>) {
      return in_turn(first_choice(v), [&](std::size_t i) { return room(i) && push_v(i); });
    } else {
      const auto i = pick(v);
      return room(i) && push_v(i);
    }
  }

  void send_all(E&& v) override {
    if constexpr (base::counts_by_index)
      if (this->fast_ != nullptr) return this->send(std::move(v));  // one channel: as send
    this->sent_ += this->counted(v);
    const bool parked = parked_;
    for (std::size_t i = 0; i < chans_.size(); ++i) {
      E copy =
          i + 1 < chans_.size() ? E{v} : std::move(v);  // NOLINT(bugprone-use-after-move): moved on the last pass only
      if (parked) overflow_.emplace_back(i, std::move(copy));
      else push_or_park(i, std::move(copy));
    }
    refresh_fast();
  }

  void watermark(std::uint64_t w) override {
    if (w <= watermark_) return;
    watermark_ = w;
    if (!parked_) store_watermark();  // else flush() stores it once the parked elements are in
  }
  /// Checkpoint barrier `id` after everything sent so far, on every channel
  /// (channel.hpp, C7): stored now, or by flush() once the parked elements
  /// are in.
  void barrier(std::uint64_t id) noexcept {
    barrier_ = id;
    if (!parked_) store_barrier();
  }

  /// Whether send_if(v, limit) would send now.
  bool would_take(const E& v, std::size_t limit) const {
    if (parked_) return false;
    auto room = [&](const channel<E>* c) { return c->ring.pushed_size() < std::min(limit, c->ring.capacity()); };
    if constexpr (broadcasting<Route>) {
      return std::all_of(chans_.begin(), chans_.end(), room);
    } else if constexpr (any_replica_route<Route> ||
                         load_aware_route<Route, std::remove_cvref_t<decltype(routed_value(v))>>) {
      return std::any_of(chans_.begin(), chans_.end(), room);
    } else {
      return room(chans_[const_cast<outlet*>(this)->pick(v)]);
    }
  }

  bool blocked() const noexcept { return parked_; }

  /// A run of values for the one channel of a single-replica route (an edge
  /// receiver's lane): moves as many as fit straight into it and publishes
  /// them; returns how many went (0 while elements are parked). The rest go
  /// through send(), which parks the next one.
  std::size_t send_run(E* from, std::size_t n) noexcept(std::is_nothrow_move_constructible_v<E>) {
    static_assert(std::is_same_v<Route, direct>, "send_run: a single-replica route");
    if (this->fast_ == nullptr || n == 0) return 0;
    auto& c = *this->fast_;
    const auto k = c.ring.push_run_unpublished(from, n);
    if constexpr (!base::counts_by_index) this->sent_ += k;  // else counted by the ring's index
    base::publish(c);
    return k;
  }

  /// Blocked: the channel to re-check after release (null: any channel).
  channel<E>* blocked_on() const noexcept {
    const auto i = overflow_[parked_from_].first;
    return i != any_channel ? chans_[i] : nullptr;
  }
  /// Blocked: asks the consumer(s) of the oldest parked element to wake the
  /// producer when they make room; returns blocked_on().
  channel<E>* wait_for_room() noexcept {
    waiting_ = true;
    const auto i = overflow_[parked_from_].first;
    if (i != any_channel) {
      chans_[i]->waiting.store(true, std::memory_order_relaxed);
      return chans_[i];
    }
    for (auto* c : chans_) c->waiting.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  /// Atomics and the immutable channel list only: safe after release.
  bool has_room(const channel<E>* c) const noexcept {
    if (c != nullptr) return c->has_room();
    return std::any_of(chans_.begin(), chans_.end(), [](const channel<E>* x) { return x->has_room(); });
  }

  /// Moves parked elements into their channels; true when none is left.
  bool flush() {
    std::size_t done = parked_from_;
    for (; done < overflow_.size(); ++done) {
      auto& [i, v] = overflow_[done];
      if (i != any_channel) {
        if (!this->push(*chans_[i], std::move(v))) break;
      } else {
        bool ok = false;
        for (std::size_t k = 0; k < chans_.size() && !ok; ++k)
          ok = this->push(*chans_[k],
                          std::move(v));  // NOLINT(bugprone-use-after-move): a failed push leaves v as it was
        if (!ok) break;
      }
    }
    if (done < overflow_.size()) {
      // What is sent stays until most of the buffer is: a burst (a window
      // firing thousands of results) is not moved up once per flush.
      parked_from_ = done;
      if (done * 2 > overflow_.size()) {
        overflow_.erase(overflow_.begin(), overflow_.begin() + static_cast<std::ptrdiff_t>(done));
        parked_from_ = 0;
      }
      return false;
    }
    overflow_.clear();
    parked_ = false;
    parked_from_ = 0;
    if (waiting_) {  // C3: we clear what we set, once flushed
      waiting_ = false;
      for (auto* c : chans_) c->waiting.store(false, std::memory_order_relaxed);
    }
    if (stored_ != watermark_) store_watermark();
    if (barrier_stored_ != barrier_) store_barrier();
    refresh_fast();
    return true;
  }

  /// Makes every push visible to its consumer (waking it if idle).
  void publish() noexcept {
    for (auto* c : chans_) base::publish(*c);
  }
  /// Publishes, then wakes every consumer that has elements but is idle; see
  /// the top of channel.hpp.
  void sweep() noexcept {
    publish();
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (auto* c : chans_)
      if (!c->ring.empty() && !c->consumer->active()) c->consumer->wake();
  }
  /// End of stream on every channel (after the last push; C2).
  void close() noexcept {
    publish();
    for (auto* c : chans_) {
      TROUPE_ASSERT(!c->closed.load(std::memory_order_relaxed), "a channel is closed twice");
      c->closed.store(true, std::memory_order_release);
    }
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (auto* c : chans_) c->consumer->wake();
  }
  /// Drops what is parked (cancellation).
  void discard() noexcept {
    overflow_.clear();
    parked_ = false;
    parked_from_ = 0;
    refresh_fast();
  }

 private:
  static bool is_marker(const E& v) noexcept {
    if constexpr (is_tagged<E>::value) return !v.value.has_value();
    else return false;
  }
  std::size_t pick(const E& v) {
    if (is_marker(v)) return 0;
    if constexpr (load_aware_route<Route, std::remove_cvref_t<decltype(routed_value(v))>>) {
      return route_->pick(routed_value(v), chans_.size(),
                          [this](std::size_t i) { return chans_[i]->ring.pushed_size(); });
    } else {
      const std::size_t i = route_->pick(routed_value(v), chans_.size());
      TROUPE_ASSERT(i < chans_.size(), "a routing policy picked a replica out of range");
      return i;
    }
  }
  /// send_if's first replica to try.
  std::size_t first_choice(const E& v) { return pick(v); }
  /// Where an element that arrives while others are parked waits: behind
  /// them, for its own channel (by key) or for any channel.
  std::size_t parked_index(const E& v) {
    // broadcast is expanded by park; any_replica waits for any channel
    if constexpr (broadcasting<Route> || any_replica_route<Route>) return any_channel;
    else return pick(v);
  }
  void park(std::size_t i, E&& v) {
    if constexpr (broadcasting<Route>) {
      for (std::size_t k = 0; k + 1 < chans_.size(); ++k) overflow_.emplace_back(k, E{v});
      overflow_.emplace_back(chans_.size() - 1, std::move(v));
    } else {
      overflow_.emplace_back(i, std::move(v));
    }
    parked_ = true;
    this->set_fast(nullptr);
    this->halt();
  }
  void push_or_park(std::size_t i, E&& v) {
    if (!this->push(*chans_[i], std::move(v))) {
      overflow_.emplace_back(i, std::move(v));  // NOLINT(bugprone-use-after-move): a failed push leaves v as it was
      parked_ = true;
      this->set_fast(nullptr);
      this->halt();
    }
  }
  /// Offers every channel once, from `first` on, until `take(i)` accepts.
  template <class Take>
  bool in_turn(std::size_t first, Take&& take) {
    const std::size_t n = chans_.size();
    for (std::size_t k = 0; k < n; ++k)
      if (take(first + k < n ? first + k : first + k - n)) return true;
    return false;
  }
  void refresh_fast() noexcept { this->set_fast(chans_.size() == 1 && !parked_ ? chans_[0] : nullptr); }
  // C5: the pushes first, then the watermark; then wake the consumers that
  // sleep (the fence pairs with the one in their release: either they see
  // the watermark, or we see them idle).
  void store_watermark() noexcept {
    publish();
    for (auto* c : chans_) {
      TROUPE_ASSERT(c->watermark.load(std::memory_order_relaxed) <= watermark_, "C5: a watermark went backwards");
      c->watermark.store(watermark_, std::memory_order_release);
    }
    stored_ = watermark_;
    wake_idle_consumers();
  }
  // C7: the pushes first, then how many there were, then the id.
  void store_barrier() noexcept {
    publish();
    for (auto* c : chans_) {
      c->barrier_at.store(c->ring.pushed_total(), std::memory_order_relaxed);
      c->barrier.store(barrier_, std::memory_order_release);
    }
    barrier_stored_ = barrier_;
    wake_idle_consumers();
  }
  // After a store beside the elements: the fence pairs with the one in the
  // consumers' release (either they see the store, or we see them idle).
  void wake_idle_consumers() noexcept {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (auto* c : chans_)
      if (!c->consumer->active()) c->consumer->wake();
  }

  std::vector<channel<E>*> chans_;
  std::optional<Route> route_;                       // set by attach
  std::vector<std::pair<std::size_t, E>> overflow_;  // parked: from parked_from_ on (sent before it)
  std::size_t parked_from_ = 0;
  bool parked_ = false;               // overflow_ holds elements (one byte for the producer's per-element test)
  bool waiting_ = false;              // some channel's `waiting` flag is ours to clear (C3)
  std::uint64_t watermark_ = 0;       // the latest watermark asked for
  std::uint64_t stored_ = 0;          // the latest one stored into the channels
  std::uint64_t barrier_ = 0;         // the latest checkpoint barrier asked for
  std::uint64_t barrier_stored_ = 0;  // the latest one stored into the channels
};

template <class D>
struct outlet_for;

/// stream::branches: one outlet per branch, each with its own channels,
/// policy and overflow.
template <class E, class... Parts>
class fanout_outlet final : public emit_target<E> {
 public:
  void attach(const fanout<E, Parts...>& d, std::size_t capacity, runner_base* self) {
    attach_parts(d, capacity, self, std::index_sequence_for<Parts...>{});
    // Each element goes to every branch once: the branches' pushes count
    // what the fanout has sent.
    if (self != nullptr) each([&](auto& p) { p.count_into(&self->emitted(), this); });
  }

  void send_routed(E&& v) override {
    this->sent_ += this->counted(v);
    each_but_last([&](auto& p) { p.send(E{v}); });
    std::get<sizeof...(Parts) - 1>(parts_).send(std::move(v));
  }
  bool send_if(E& v, std::size_t limit) override {
    // Every branch must take it; then each one does (consumers only make room).
    bool all = true;
    each([&](auto& p) { all = all && p.would_take(v, limit); });
    if (!all) return false;
    const auto n = this->counted(v);
    this->sent_ += n;  // before the pushes, which may publish (C9)
    each_but_last([&](auto& p) {
      E copy{v};
      [[maybe_unused]] const bool sent = p.send_if(copy, limit);
    });
    if (std::get<sizeof...(Parts) - 1>(parts_).send_if(v, limit)) return true;
    this->sent_ -= n;
    return false;
  }
  void send_all(E&& v) override {
    this->sent_ += this->counted(v);
    each_but_last([&](auto& p) { p.send_all(E{v}); });
    std::get<sizeof...(Parts) - 1>(parts_).send_all(std::move(v));
  }
  void watermark(std::uint64_t w) override {
    each([w](auto& p) { p.watermark(w); });
  }
  void barrier(std::uint64_t id) noexcept {
    each([id](auto& p) { p.barrier(id); });
  }
  bool would_take(const E& v, std::size_t limit) const {
    bool all = true;
    each([&](const auto& p) { all = all && p.would_take(v, limit); });
    return all;
  }

  bool blocked() const noexcept {
    bool any = false;
    each([&](const auto& p) { any = any || p.blocked(); });
    return any;
  }
  channel<E>* blocked_on() const noexcept {
    channel<E>* c = nullptr;
    std::size_t i = 0, found = SIZE_MAX;
    each([&](const auto& p) {
      if (found == SIZE_MAX && p.blocked()) found = i, c = p.blocked_on();
      ++i;
    });
    blocked_part_.store(found, std::memory_order_relaxed);
    return c;
  }
  channel<E>* wait_for_room() noexcept {
    channel<E>* c = nullptr;
    std::size_t i = 0, found = SIZE_MAX;
    each([&](auto& p) {
      if (found == SIZE_MAX && p.blocked()) found = i, c = p.wait_for_room();
      ++i;
    });
    blocked_part_.store(found, std::memory_order_relaxed);
    return c;
  }
  /// Safe after release: reads the part remembered by blocked_on/wait_for_room.
  bool has_room(const channel<E>* c) const noexcept {
    if (c != nullptr) return c->has_room();
    const std::size_t part = blocked_part_.load(std::memory_order_relaxed);
    bool room = true;
    std::size_t i = 0;
    each([&](const auto& p) {
      if (i++ == part) room = p.has_room(nullptr);
    });
    return room;
  }
  bool flush() {
    bool all = true;
    each([&](auto& p) { all = p.flush() && all; });
    return all;
  }
  void publish() noexcept {
    each([](auto& p) { p.publish(); });
  }
  void sweep() noexcept {
    each([](auto& p) { p.sweep(); });
  }
  void close() noexcept {
    each([](auto& p) { p.close(); });
  }
  void discard() noexcept {
    each([](auto& p) { p.discard(); });
  }
  void halt_into(std::size_t* left) noexcept {
    each([left](auto& p) { p.halt_into(left); });
  }

 private:
  template <std::size_t... I>
  void attach_parts(const fanout<E, Parts...>& d, std::size_t capacity, runner_base* self, std::index_sequence<I...>) {
    (std::get<I>(parts_).attach(std::get<I>(d.parts), capacity, self), ...);
  }
  template <class F>
  void each(F&& f) {
    std::apply([&](auto&... p) { (f(p), ...); }, parts_);
  }
  template <class F>
  void each(F&& f) const {
    std::apply([&](const auto&... p) { (f(p), ...); }, parts_);
  }
  template <class F>
  void each_but_last(F&& f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (f(std::get<I>(parts_)), ...);
    }(std::make_index_sequence<sizeof...(Parts) - 1>{});
  }

  std::tuple<typename outlet_for<Parts>::type...> parts_;
  mutable std::atomic<std::size_t> blocked_part_{SIZE_MAX};
};

/// Sinks have no outlet.
class no_outlet {
 public:
  bool blocked() const noexcept { return false; }
  channel<int>* wait_for_room() noexcept { return nullptr; }
  channel<int>* blocked_on() const noexcept { return nullptr; }
  bool has_room(const channel<int>*) const noexcept { return true; }
  bool flush() noexcept { return true; }
  void publish() noexcept {}
  void sweep() noexcept {}
  void close() noexcept {}
  std::uint64_t take_sent() noexcept { return 0; }
  void discard() noexcept {}
  void watermark(std::uint64_t) noexcept {}
  void barrier(std::uint64_t) noexcept {}
  void halt_into(std::size_t*) noexcept {}
};

template <class E, class Route>
struct outlet_for<downstream<E, Route>> {
  using type = outlet<E, Route>;
};
template <class E, class... Parts>
struct outlet_for<fanout<E, Parts...>> {
  using type = fanout_outlet<E, Parts...>;
};
template <>
struct outlet_for<no_downstream> {
  using type = no_outlet;
};
template <class D>
using outlet_for_t = typename outlet_for<D>::type;

}  // namespace troupe::detail
