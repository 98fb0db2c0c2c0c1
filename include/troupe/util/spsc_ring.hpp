// spsc_ring.hpp: a bounded, lock-free single-producer single-consumer ring of
// T values stored in place: the typed channel under troupe's streaming layer.
// Use it between exactly one producer thread and one consumer thread at a
// time (they may change between uses if the hand-over synchronises). Don't
// use it with several producers or consumers.
// Cost: a push or pop is a few plain loads and stores plus one release
// store; each side caches the other side's index and reads the shared one
// only when the cached value says full (producer) or empty (consumer). The
// two indices live on separate cache lines. No allocation after construction;
// move-only T works.
//
// The producer pushes through a window: a run of free slots [cur, end) it
// may fill one after another with one test each (cur != end), store the
// value at cur and advance cur. The window ends before the first slot the
// consumer may still hold, at the end of the slot array, and before the push
// that completes a publish group; a push at its end takes the slow path,
// which checks those three and opens the next window. The producer's index
// (next) is where cur points, counted in laps of the array.
//
// Invariants (TROUPE_ASSERT, debug and sanitizer builds), with head the
// consumer's index, tail the published one and next the producer's own:
//   R1 head <= tail <= next <= head + capacity (nothing is overwritten);
//   R2 the consumer reads only slots below tail (published values);
//   R3 only the producer moves tail and next, only the consumer moves head;
//   R4 the window's slots lie in one lap, from next up to at most
//      min(head + capacity, publish_at - 1), where head is the producer's
//      last view of it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "troupe/detail/assert.hpp"
#include "troupe/util/cache.hpp"

namespace troupe {

template <class T>
class spsc_ring {
 public:
  /// `capacity` is rounded up to a power of two (at least 2).
  explicit spsc_ring(std::size_t capacity) : mask_{round_up(capacity) - 1}, slots_{new slot[mask_ + 1]} {}
  spsc_ring(const spsc_ring&) = delete;
  spsc_ring& operator=(const spsc_ring&) = delete;
  ~spsc_ring() {
    publish();
    T* v;
    while ((v = front()) != nullptr) pop();
  }

  std::size_t capacity() const noexcept { return mask_ + 1; }

  /// Producer. The slots a push may fill without a test of its own (see the
  /// top): construct a T at cur and advance cur, while cur != end. Every
  /// other producer call sees those pushes; they are unpublished.
  struct window {
    T* cur = nullptr;
    T* end = nullptr;
  };
  window& producer_window() noexcept { return win_; }

  /// Producer. false when full (the value is left untouched).
  template <class... Args>
  [[nodiscard]] bool try_emplace(Args&&... args) {
    std::size_t t;
    if (!place(t, std::forward<Args>(args)...)) return false;
    // An empty window: the next unpublished push opens it (a ring used
    // only this way never does).
    store_tail(t);
    win_.end = win_.cur;
    return true;
  }
  [[nodiscard]] bool try_push(T&& v) { return try_emplace(std::move(v)); }
  [[nodiscard]] bool try_push(const T& v) { return try_emplace(v); }

  /// Producer. Like try_emplace, but the consumer sees the value only after
  /// the next publish() (or a later try_emplace): a batch of values then
  /// costs one index store, and a consumer polling the ring one cache-line
  /// transfer of the index instead of one per value.
  /// Always inline: it is every channel push; GCC left it out of line in
  /// a source's loop once the code around it grew (pipeline3: +10
  /// instructions per tuple).
  template <class... Args>
  [[nodiscard, gnu::always_inline]] bool try_emplace_unpublished(Args&&... args) {
    if (win_.cur != win_.end) [[likely]] {
      ::new (static_cast<void*>(win_.cur)) T(std::forward<Args>(args)...);
      ++win_.cur;
      return true;
    }
    return place_at_window_end(std::forward<Args>(args)...) != 0;
  }
  /// Producer. Moves up to `n` values from `from` into the ring, unpublished
  /// (as try_emplace_unpublished, in order); returns how many fit. A run of
  /// trivially copyable values is one or two memmoves.
  std::size_t push_run_unpublished(T* from, std::size_t n) noexcept(std::is_nothrow_move_constructible_v<T>) {
    const auto t = next();
    if (t + n > limit_) limit_ = head_.load(std::memory_order_acquire) + mask_ + 1;
    TROUPE_ASSERT(t <= limit_, "R1: the producer is past the values not yet consumed");
    if (limit_ - t < n) n = limit_ - t;
    const std::size_t at = t & mask_;
    const std::size_t first = before_wrap(at, n);
    std::uninitialized_move_n(from, first, slot_ptr(at));
    std::uninitialized_move_n(from + first, n - first, slot_ptr(0));
    move_to(t + n);
    return n;
  }
  /// Producer. Makes every value pushed so far visible; true if there were
  /// unpublished ones.
  bool publish() noexcept {
    TROUPE_ASSERT(published_ <= next(), "R1: published past the producer's index");
    if (next() == published_) return false;
    publish_pending();
    return true;
  }
  /// Producer. publish() when some values are known to be unpublished (a
  /// group is due): without its test.
  void publish_pending() noexcept { publish_to(next()); }
  /// Producer. publish_pending() where the caller has the producer's index
  /// `t` (place_at_window_end's result).
  void publish_to(std::size_t t) noexcept {
    TROUPE_ASSERT(t == next(), "publish_to: not the producer's index");
    TROUPE_ASSERT(published_ < t, "publish_pending: nothing to publish");
    store_tail(t);
    open_window(t);
  }
  /// Producer. The push where the window ends (try_emplace_unpublished's
  /// slow path; outlets call it directly, then publish_to): 0 when full,
  /// else the producer's index after it. When that index completes a group
  /// (group_due_at), the next window is empty until a publish opens one
  /// (R4), so it is set empty without computing it; each window index and
  /// test is computed once.
  template <class... Args>
  [[gnu::noinline]] std::size_t place_at_window_end(Args&&... args) {
    std::size_t t;
    if (!place(t, std::forward<Args>(args)...)) return 0;
    if (t < publish_at_) open_window(t);
    else win_.end = win_.cur;
    return t;
  }
  /// Producer. Values pushed and not yet published.
  std::size_t unpublished() const noexcept { return next() - published_; }
  /// Producer. How many unpublished values make a group (group_due); 1, the
  /// default: every one.
  void set_publish_group(std::size_t n) noexcept {
    group_ = n == 0 ? 1 : n;
    publish_at_ = published_ + group_;
    open_window(next());
  }
  /// Producer. unpublished() >= the group size. Only a push at the window's
  /// end can make it true (R4): the producer tests it after those.
  bool group_due() const noexcept { return group_due_at(next()); }
  /// group_due() where the producer's index is known to be `t`.
  bool group_due_at(std::size_t t) const noexcept { return t >= publish_at_; }
  /// Producer. Values pushed (published or not) and not yet consumed.
  std::size_t pushed_size() const noexcept { return next() - head_.load(std::memory_order_acquire); }
  /// Producer. Values pushed since the ring was made (published or not).
  std::size_t pushed_total() const noexcept { return next(); }
  /// Consumer. Values taken since the ring was made.
  std::size_t taken_total() const noexcept { return head_.load(std::memory_order_relaxed); }

  /// Consumer. The oldest value, or nullptr when empty; valid until pop().
  T* front() noexcept {
    const auto h = head_.load(std::memory_order_relaxed);
    if (h == cached_tail_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (h == cached_tail_) return nullptr;
    }
    return std::launder(reinterpret_cast<T*>(slots_[h & mask_].bytes));
  }
  /// Consumer. Destroys the front value; precondition: front() != nullptr.
  void pop() noexcept {
    const auto h = head_.load(std::memory_order_relaxed);
    TROUPE_ASSERT(h != tail_.load(std::memory_order_acquire), "R2: pop() on an empty ring");
    std::launder(reinterpret_cast<T*>(slots_[h & mask_].bytes))->~T();
    head_.store(h + 1, std::memory_order_release);
  }
  /// Consumer. Moves the oldest value into `out`; false when empty.
  /// front() and pop() in one: one load of head_, no null test.
  [[nodiscard]] bool try_pop(T& out) {
    const auto h = head_.load(std::memory_order_relaxed);
    if (h == cached_tail_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (h == cached_tail_) return false;
    }
    T* v = std::launder(reinterpret_cast<T*>(slots_[h & mask_].bytes));
    out = std::move(*v);
    v->~T();
    head_.store(h + 1, std::memory_order_release);
    return true;
  }

  /// Consumer. Calls f(T&) on up to `max` values in order, oldest first,
  /// until f returns false; every value f was called with is then destroyed.
  /// One index store frees all their slots. Returns how many f saw. f must
  /// not throw.
  template <class F>
  std::size_t consume(std::size_t max, F&& f) noexcept {
    const auto h = head_.load(std::memory_order_relaxed);
    const std::size_t n = readable(h, max);
    if (n == 0) return 0;
    // Walked as one or two runs of adjacent slots: a pointer and one test
    // per value, no index arithmetic.
    const std::size_t first = before_wrap(h & mask_, n);
    T* run = slot_ptr(h & mask_);
    T* p = run;
    T* end = run + first;
    std::size_t rest = n - first;  // the run after the wrap
    std::size_t before = 0;        // values in the runs finished
    for (;;) {
      if (p == end) {
        if (rest == 0) break;
        before = first;
        run = p = slot_ptr(0);
        end = run + rest;
        rest = 0;
      }
      T* v = std::launder(p);
      const bool go = f(*v);
      v->~T();
      ++p;
      if (!go) break;
    }
    const std::size_t taken = before + static_cast<std::size_t>(p - run);
    head_.store(h + taken, std::memory_order_release);
    return taken;
  }

  /// Consumer. Like consume, with the producer's index read only when the
  /// cached one says empty, but f(T* first, std::size_t n) gets one or two
  /// runs of adjacent values (n >= 1), oldest first, and returns how many
  /// of the run it took, from `first` on, and destroyed (each right after
  /// its use, while it is in cache and a moved-from value's destructor is
  /// known to be trivial); fewer than n ends the call. Returns how many
  /// were taken. f must not throw.
  template <class F>
  std::size_t take_runs(std::size_t max, F&& f) noexcept {
    const auto h = head_.load(std::memory_order_relaxed);
    const std::size_t n = readable(h, max);
    if (n == 0) return 0;
    const std::size_t at = h & mask_;
    const std::size_t first = before_wrap(at, n);
    std::size_t taken = f(std::launder(slot_ptr(at)), first);
    TROUPE_ASSERT(taken <= first, "take_runs: f took more than its run");
    if (taken == first && n != first) {
      const std::size_t more = f(std::launder(slot_ptr(0)), n - first);
      TROUPE_ASSERT(more <= n - first, "take_runs: f took more than its run");
      taken += more;
    }
    head_.store(h + taken, std::memory_order_release);
    return taken;
  }

  /// Consumer. Hands up to `max` published values to f(T* first, size_t n)
  /// as one or two contiguous runs, oldest first, then destroys them: one
  /// index store frees their slots. Returns how many (0: empty). f may move
  /// from the values and must not throw.
  template <class F>
  std::size_t consume_runs(std::size_t max, F&& f) noexcept {
    const auto h = head_.load(std::memory_order_relaxed);
    // A bulk take looks at the producer's index unless the cached view
    // already holds `max`: a run is worth one more load.
    if (cached_tail_ - h < max) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (h == cached_tail_) return 0;
    }
    TROUPE_ASSERT(cached_tail_ - h <= mask_ + 1, "R1: more published values than the ring holds");
    const std::size_t n = cached_tail_ - h < max ? cached_tail_ - h : max;
    const std::size_t at = h & mask_;
    const std::size_t first = before_wrap(at, n);
    if (first != 0) f(std::launder(slot_ptr(at)), first);
    if (n != first) f(std::launder(slot_ptr(0)), n - first);
    std::destroy_n(slot_ptr(at), first);
    std::destroy_n(slot_ptr(0), n - first);
    head_.store(h + n, std::memory_order_release);
    return n;
  }

  /// Consumer. Calls f(const T&) on the oldest `n` values, in order,
  /// without taking them; precondition: at least `n` are published (size()
  /// said so). f may throw.
  template <class F>
  void peek(std::size_t n, F&& f) const {
    const auto h = head_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) f(*std::launder(reinterpret_cast<const T*>(slots_[(h + i) & mask_].bytes)));
  }

  /// Either side; a snapshot of the published values.
  std::size_t size() const noexcept {
    return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_acquire);
  }
  bool empty() const noexcept { return size() == 0; }

 private:
  struct slot {
    alignas(T) unsigned char bytes[sizeof(T)];
  };
  static_assert(sizeof(slot) == sizeof(T), "slots are laid out as an array of T");
  /// Slot i's storage as a T* (the slots are one array of T-sized, T-aligned
  /// cells: runs of them are contiguous arrays of T).
  T* slot_ptr(std::size_t i) noexcept { return reinterpret_cast<T*>(slots_[i].bytes); }
  /// Consumer. Of up to `max` values from index h, how many are published,
  /// by the cached view of the producer's index, read again only when that
  /// says empty.
  std::size_t readable(std::size_t h, std::size_t max) noexcept {
    if (h == cached_tail_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (h == cached_tail_) return 0;
    }
    TROUPE_ASSERT(cached_tail_ - h <= mask_ + 1, "R1: more published values than the ring holds");
    return cached_tail_ - h < max ? cached_tail_ - h : max;
  }
  /// Of a run of n slots from slot `at`, how many come before the ring wraps.
  std::size_t before_wrap(std::size_t at, std::size_t n) const noexcept {
    return n < mask_ + 1 - at ? n : mask_ + 1 - at;
  }
  /// Producer. Publishes up to index t (the three stores of a publish).
  void store_tail(std::size_t t) noexcept {
    published_ = t;
    publish_at_ = t + group_;
    tail_.store(t, std::memory_order_release);
  }
  /// Producer. The index of the next push: where the window's cursor is.
  std::size_t next() const noexcept {
    return lap_ + static_cast<std::size_t>(win_.cur - reinterpret_cast<const T*>(slots_[0].bytes));
  }
  /// Producer. Puts the cursor at index t (pushes made some other way) and
  /// opens the window from there.
  void move_to(std::size_t t) noexcept {
    lap_ = t & ~mask_;
    win_.cur = slot_ptr(t & mask_);
    open_window(t);
  }
  /// Producer. The window from index t (the cursor's): up to the cached
  /// limit, the end of the lap, and the push that completes a group (R4).
  void open_window(std::size_t t) noexcept {
    std::size_t e = std::min(limit_, lap_ + mask_ + 1);
    if (publish_at_ - 1 < e) e = publish_at_ - 1;
    win_.end = e > t ? win_.cur + (e - t) : win_.cur;
  }
  /// Producer. A push with every test: re-reads the consumer's index when
  /// the cached one says full, moves to the next lap at the end of the
  /// array. false when full; else `after` is the producer's index after it.
  template <class... Args>
  [[gnu::always_inline]] bool place(std::size_t& after, Args&&... args) {
    const auto t = next();
    if (t >= limit_) {
      limit_ = head_.load(std::memory_order_acquire) + mask_ + 1;
      if (t >= limit_) return false;
    }
    TROUPE_ASSERT(t < limit_, "R1: a push would overwrite a value not yet consumed");
    if ((t & mask_) == 0 && t != lap_) [[unlikely]] {  // the cursor is at the end of the array
      lap_ = t;
      win_.cur = slot_ptr(0);
    }
    ::new (static_cast<void*>(win_.cur)) T(std::forward<Args>(args)...);
    ++win_.cur;
    after = t + 1;
    return true;
  }
  static std::size_t round_up(std::size_t n) {
    if (n > (std::size_t{1} << 40)) throw std::length_error("spsc_ring: capacity too large");
    std::size_t c = 2;
    while (c < n) c <<= 1;
    return c;
  }

  const std::size_t mask_;
  std::unique_ptr<slot[]> slots_;
  alignas(cache_line) std::atomic<std::size_t> head_{0};  // consumer writes
  std::size_t cached_tail_ = 0;                           // consumer's view of tail_
  alignas(cache_line) std::atomic<std::size_t> tail_{0};  // producer writes, consumer polls
  // The producer's own fields, off tail_'s line: the cursor changes with
  // every push, and a consumer polling tail_ must not pull that line each
  // time.
  alignas(cache_line) window win_{slot_ptr(0), slot_ptr(0)};  // empty: the first push opens it
  std::size_t lap_ = 0;                                       // the index of slot 0 in the cursor's lap
  std::size_t published_ = 0;                                 // the last value stored in tail_
  // The producer's view of head_, as the first index a push may not fill
  // (head + capacity): the test before every push is one comparison.
  std::size_t limit_ = mask_ + 1;
  std::size_t publish_at_ = 1;  // published_ + group_
  std::size_t group_ = 1;
};

}  // namespace troupe
