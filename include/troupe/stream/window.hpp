// window.hpp: keyed windows over a stream, as nodes.
//   // the sum of every 100 readings per sensor, a new window every 10 readings
//   stream::count_window<reading>(&reading::sensor, 100, 10,
//       [](const int& sensor, std::span<const reading> w) { return sum_of(w); })
//   // the same, folded element by element (no buffer of the elements)
//   stream::count_window_incremental<reading>(&reading::sensor, 100, 10, 0.0,
//       [](double& acc, const reading& r) { acc += r.value; })
//   // per sensor, every 60 s window starting each 10 s of event time
//   stream::time_window<reading>(&reading::sensor, &reading::time, 60'000, 10'000, f)
//   stream::time_window_incremental<reading>(&reading::sensor, &reading::time, 60'000, 10'000, init, add)
// Each emits stream::window_result<Key, R>{key, start, end, value} once per
// window. Windows of a key are [k*slide, k*slide + size) for k = 0, 1, ...:
// positions of the key's elements (0, 1, ...) for count windows, values of
// the time function (any unsigned unit) for time windows. slide == size:
// tumbling; slide < size: sliding; slide > size: hopping (elements between
// windows belong to none). A count window fires with its last element; a
// time window fires when an element of the same key at or after its end
// arrives. At the end of the stream the windows still open fire with what
// they hold (for count windows end - start < size tells them apart).
// Empty windows never fire: a window fires only if it holds an element
// (time windows skip the gaps of a key's times; count windows are never
// empty).
// Time windows need each key's times not to decrease: an element older than
// its key's previous element is dropped and counted (late() of the node
// given to the pattern: replicas share the count).
//
// Event time (stream/watermark.hpp). When a stage before a time window
// generates watermarks, the window works by them instead: a key's elements
// may come in any order; the watermark w closes the windows of EVERY key
// whose end (+ allowed_lateness(L)) is at or before w, and an element is late
// when every window that would hold it has closed (tumbling: when w has
// reached its window's end + L); later elements join their windows.
// Late elements are dropped and counted in late() in both modes, and go to
// the side output if one is set:
//   st::time_window<reading>(&reading::sensor, &reading::time, 60'000, 60'000, f)
//       .allowed_lateness(5'000)                          // close 5 s after the end
//       .on_late([](reading& r) { ... })                  // or .late_to(actor): st::late_element<reading>
// on_late runs on the window replica's thread (replicas call it in
// parallel). Without watermarks in the graph allowed_lateness does nothing
// and windows close per key as above.
//
// Put a window in a farm routed by the same key to run keys in parallel.
// Cost: one hash of the key per element, into an open-addressing table
// (detail/key_table.hpp): no allocation per element, nor per key once the
// tables have grown. Whole-window forms keep each key's elements of its open
// windows in a contiguous buffer (by time: an element out of order is
// inserted in its place); incremental forms keep one accumulator per open
// window (size / slide of them) and update each per element. Without
// watermarks (and for count windows) a key's state stays until the end of
// the stream. With watermarks, the incremental forms keep a table of every
// key's accumulator per open window: a watermark fires each window it closes
// in one go (its results back to back, window by window) and its table's
// memory serves the next window, so memory follows the keys of the open
// windows, not every key ever seen; the whole-window forms visit every key
// that has an open window and forget the keys left empty.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <span>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/detail/key_table.hpp"
#include "troupe/stream/node.hpp"
#include "troupe/stream/watermark.hpp"

namespace troupe::stream {

template <class Key, class R>
struct window_result {
  Key key;
  std::uint64_t start;  ///< first position (count) or time of the window
  std::uint64_t end;    ///< one past the last position (count) or time
  R value;
  friend bool operator==(const window_result&, const window_result&) = default;
  /// Its fields, in order: how it crosses between processes (troupe::net).
  auto fields() { return std::tie(key, start, end, value); }
};

namespace detail {

/// Runs `f` when the scope ends, normally or by an exception: a window whose
/// function throws is over all the same (its elements are not fired again).
template <class F>
struct at_scope_exit {
  F f;
  ~at_scope_exit() { f(); }
};
template <class F>
at_scope_exit(F) -> at_scope_exit<F>;

inline void check_window(std::uint64_t size, std::uint64_t slide) {
  if (size == 0) throw std::invalid_argument("window: size must be at least 1");
  if (slide == 0) throw std::invalid_argument("window: slide must be at least 1");
}

/// Elements of one key from position `first` on, contiguous.
template <class T>
class window_buffer {
 public:
  void push(T v) { items_.push_back(std::move(v)); }
  /// Before position i (event time: an element out of order).
  void insert(std::size_t i, T v) {
    items_.insert(items_.begin() + static_cast<std::ptrdiff_t>(head_ + i), std::move(v));
  }
  std::size_t size() const noexcept { return items_.size() - head_; }
  bool empty() const noexcept { return size() == 0; }
  const T& operator[](std::size_t i) const noexcept { return items_[head_ + i]; }
  std::span<const T> first(std::size_t n) const noexcept { return {items_.data() + head_, n}; }
  std::span<const T> range(std::size_t from, std::size_t n) const noexcept { return {items_.data() + head_ + from, n}; }
  void drop(std::size_t n) {
    head_ += n;
    if (head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    } else if (head_ > 64 && head_ * 2 > items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

 private:
  std::vector<T> items_;
  std::size_t head_ = 0;
};

/// A key's open windows (window index, accumulator), oldest first: a vector
/// that keeps its memory when windows close.
template <class R>
class open_windows {
 public:
  using value_type = std::pair<std::uint64_t, R>;
  bool empty() const noexcept { return head_ == items_.size(); }
  value_type& front() noexcept { return items_[head_]; }
  value_type& back() noexcept { return items_.back(); }
  value_type* begin() noexcept { return items_.data() + head_; }
  value_type* end() noexcept { return items_.data() + items_.size(); }
  void emplace_back(std::uint64_t w, const R& init) { items_.emplace_back(w, init); }
  /// Before `at` (a position of [begin(), end()]).
  value_type* emplace(value_type* at, std::uint64_t w, const R& init) {
    const auto i = at - items_.data();
    return &*items_.emplace(items_.begin() + i, w, init);
  }
  void pop_front() {
    if (++head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    }
  }

 private:
  std::vector<value_type> items_;
  std::size_t head_ = 0;
};

/// A key's time order (without watermarks): times must not decrease; an
/// older element is refused (and counted late).
struct key_clock {
  bool seen = false;
  std::uint64_t last = 0;  // time of the key's latest element
  bool admit(std::uint64_t t) noexcept {
    if (seen && t < last) return false;
    seen = true;
    last = t;
    return true;
  }
};

template <class KeyFn, class T>
using key_of = std::decay_t<std::invoke_result_t<const KeyFn&, const T&>>;

}  // namespace detail

/// Count windows, whole-window function f(const Key&, std::span<const T>) -> R.
template <class T, class KeyFn, class F>
class count_window_node
    : public node<
          T, window_result<
                 detail::key_of<KeyFn, T>,
                 std::decay_t<std::invoke_result_t<const F&, const detail::key_of<KeyFn, T>&, std::span<const T>>>>> {
  using Key = detail::key_of<KeyFn, T>;
  using R = std::decay_t<std::invoke_result_t<const F&, const Key&, std::span<const T>>>;

 public:
  static constexpr const char* kind = "count_window";
  count_window_node(KeyFn key, std::uint64_t size, std::uint64_t slide, F f)
      : key_{std::move(key)}, size_{size}, slide_{slide}, f_{std::move(f)} {
    detail::check_window(size, slide);
  }

  void consume(T& x) {
    const Key& key = std::invoke(key_, std::as_const(x));
    auto& e = keys_.find_or_insert(key, table::hash(key), [] { return state{}; });
    auto& s = e.value;
    const std::uint64_t i = s.next++;
    if (i < s.window * slide_) return;  // between hopping windows
    s.buf.push(std::move(x));
    if (i == s.window * slide_ + size_ - 1) fire(e.key, s);
  }

  void on_stop() {
    for (auto& e : keys_)
      while (!e.value.buf.empty()) fire(e.key, e.value);
    keys_.clear();
  }

 private:
  struct state {
    std::uint64_t next = 0;        // position of the key's next element
    std::uint64_t window = 0;      // the oldest window not fired yet
    detail::window_buffer<T> buf;  // elements from position window*slide on
  };
  // Fires the oldest window with what the key holds, then moves on.
  void fire(const Key& k, state& s) {
    detail::at_scope_exit next{[&] { advance(s); }};
    const auto w = s.buf.first(s.buf.size());
    const std::uint64_t start = s.window * slide_;
    this->send_next(window_result<Key, R>{k, start, start + w.size(), std::invoke(f_, k, w)});
  }
  void advance(state& s) {
    ++s.window;
    s.buf.drop(std::min<std::uint64_t>(slide_, s.buf.size()));
  }

  using table = troupe::detail::key_table<Key, state>;

  KeyFn key_;
  std::uint64_t size_, slide_;
  F f_;
  table keys_;
};

/// Count windows folded element by element: add(R&, const T&), from `init`.
template <class T, class KeyFn, class R, class Add>
class count_window_incremental_node : public node<T, window_result<detail::key_of<KeyFn, T>, R>> {
  using Key = detail::key_of<KeyFn, T>;

 public:
  static constexpr const char* kind = "count_window";
  count_window_incremental_node(KeyFn key, std::uint64_t size, std::uint64_t slide, R init, Add add)
      : key_{std::move(key)}, size_{size}, slide_{slide}, init_{std::move(init)}, add_{std::move(add)} {
    detail::check_window(size, slide);
  }

  void consume(T& x) {
    const Key& key = std::invoke(key_, std::as_const(x));
    auto& e = keys_.find_or_insert(key, table::hash(key), [] { return state{}; });
    auto& s = e.value;
    const std::uint64_t i = s.next++;
    if (i % slide_ == 0) s.open.emplace_back(i / slide_, init_);
    for (auto& [w, acc] : s.open) std::invoke(add_, acc, std::as_const(x));
    if (!s.open.empty() && s.open.front().first * slide_ + size_ - 1 == i) {
      auto& [w, acc] = s.open.front();
      detail::at_scope_exit next{[&] { s.open.pop_front(); }};
      this->send_next(window_result<Key, R>{e.key, w * slide_, w * slide_ + size_, std::move(acc)});
    }
  }

  void on_stop() {
    for (auto& e : keys_)
      for (auto& [w, acc] : e.value.open)
        this->send_next(window_result<Key, R>{e.key, w * slide_, e.value.next, std::move(acc)});
    keys_.clear();
  }

 private:
  struct state {
    std::uint64_t next = 0;
    detail::open_windows<R> open;
  };
  using table = troupe::detail::key_table<Key, state>;

  KeyFn key_;
  std::uint64_t size_, slide_;
  R init_;
  Add add_;
  table keys_;
};

namespace detail {
/// The windows [k*slide, k*slide+size) that contain t: k in [first, last].
inline std::uint64_t first_window_containing(std::uint64_t t, std::uint64_t size, std::uint64_t slide) {
  return t < size ? 0 : (t - size) / slide + 1;
}
}  // namespace detail

namespace detail {
/// What both time-window nodes share: the key and time functions, the
/// window shape, each key's state (with its key_clock), the count of late
/// elements and their side output. Without watermarks,
/// Derived::add(key, state, time, element) takes an element in its key's
/// time order and Derived::flush(key, state) fires what a key still holds at
/// the end of the stream. With watermarks (event time),
/// Derived::place(key, time, element) takes an element that has an open
/// window and Derived::close_below(upto) fires every key's windows below
/// index `upto` (those below closed_ are closed already); a Derived that
/// keeps its event-time state per key in keys_ uses place_in_key and
/// close_keys with Derived::place(key, state, time, element),
/// Derived::close(key, state, from, upto) and Derived::idle(state).
template <class Derived, class T, class KeyFn, class TimeFn, class State, class Out>
class time_window_base : public node<T, Out> {
 public:
  using Key = key_of<KeyFn, T>;

  void consume(T& x) {
    const auto t = time_of(x);
    if (this->event_time()) {
      const auto [lo, hi] = windows_of(t);
      if (lo > hi) return;                 // between hopping windows
      if (hi < closed_) return refuse(x);  // its windows have all closed
      self().place(std::invoke(key_, std::as_const(x)), t, std::max(lo, closed_), hi, x);
      return;
    }
    const Key& k = std::invoke(key_, std::as_const(x));
    auto& e = keys_.find_or_insert(k, table::hash(k), [] { return State{}; });
    if (e.value.clock.admit(t)) self().add(e.key, e.value, t, x);
    else refuse(x);
  }

  /// Event time: closes the windows of every key that end (+ the allowed
  /// lateness) at or before w.
  void on_watermark(std::uint64_t w) {
    const std::uint64_t upto = closed_below(w);
    if (upto <= closed_) return;
    self().close_below(upto);
    closed_ = upto;
  }

  void on_stop() {
    if (this->event_time()) {
      self().close_below(UINT64_MAX);
    } else {
      for (auto& e : keys_) self().flush(e.key, e.value);
    }
    keys_.clear();
  }

  /// Elements dropped as late, over every replica (ask the node object that
  /// was given to the pattern): out of their key's time order, or (event
  /// time) after the watermark had closed their windows.
  std::uint64_t late() const noexcept { return late_->load(std::memory_order_relaxed); }

  /// Event time: windows close when the watermark reaches their end + l
  /// (elements up to l behind the watermark still join them).
  Derived& allowed_lateness(std::uint64_t l) & {
    lateness_ = l;
    return self();
  }
  Derived&& allowed_lateness(std::uint64_t l) && { return std::move(allowed_lateness(l)); }
  /// Late elements go to f(T&) (on the replica's thread) as well as being counted.
  template <class F>
    requires std::is_invocable_v<F&, T&>
  Derived& on_late(F f) & {
    late_to_ = [f = std::move(f)](T& x, std::uint64_t) mutable { std::invoke(f, x); };
    return self();
  }
  template <class F>
    requires std::is_invocable_v<F&, T&>
  Derived&& on_late(F f) && {
    return std::move(on_late(std::move(f)));
  }
  /// Late elements go to actor `a` as stream::late_element<T> messages.
  Derived& late_to(actor a) & {
    late_to_ = [a = std::move(a)](T& x, std::uint64_t w) {
      actor_cell::deliver(a, troupe::detail::make_message(actor{}, 0, late_element<T>{std::move(x), w}));
    };
    return self();
  }
  Derived&& late_to(actor a) && { return std::move(late_to(std::move(a))); }

 private:
  friend Derived;  // only the node it is the base of constructs it
  time_window_base(KeyFn key, TimeFn time, std::uint64_t size, std::uint64_t slide)
      : key_{std::move(key)}, time_{std::move(time)}, size_{size}, slide_{slide} {
    check_window(size, slide);
  }

 protected:
  std::uint64_t time_of(const T& x) const { return static_cast<std::uint64_t>(std::invoke(time_, x)); }
  /// The windows that hold time t: [first, last] (first > last: none, t is
  /// between hopping windows). Remembers the span of times with the same
  /// answer: consecutive elements rarely cross it, and then cost no division.
  std::pair<std::uint64_t, std::uint64_t> windows_of(std::uint64_t t) noexcept {
    if (t - span_from_ >= span_length_) [[unlikely]]
      new_span(t);
    return span_;
  }
  void new_span(std::uint64_t t) noexcept {
    const std::uint64_t lo = first_window_containing(t, size_, slide_), hi = t / slide_;
    // hi holds on [hi*slide, (hi+1)*slide); lo on [size + (lo-1)*slide, size + lo*slide) (lo = 0: [0, size)).
    const std::uint64_t lo_from = lo == 0 ? 0 : size_ + (lo - 1) * slide_;  // both at most t
    const std::uint64_t from = std::max(hi * slide_, lo_from);
    const std::uint64_t to =
        std::min(saturating_add(hi * slide_, slide_), lo == 0 ? size_ : saturating_add(lo_from, slide_));
    span_from_ = from;
    span_length_ = to - from;
    span_ = {lo, hi};
  }
  static std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
  }

  /// Event time: the first window index still open at watermark w (window k
  /// closes when w >= k * slide + size + lateness).
  std::uint64_t closed_below(std::uint64_t w) const noexcept {
    if (lateness_ > UINT64_MAX - size_) return 0;
    const std::uint64_t span = size_ + lateness_;
    return w < span ? 0 : (w - span) / slide_ + 1;
  }

  KeyFn key_;
  TimeFn time_;
  std::uint64_t size_, slide_;
  std::uint64_t lateness_ = 0;
  std::uint64_t closed_ = 0;                        // event time: windows below this index have closed
  std::uint64_t span_from_ = 0, span_length_ = 0;   // windows_of: [span_from_, + span_length_) holds in span_
  std::pair<std::uint64_t, std::uint64_t> span_{};  // windows_of's last answer

  /// Event time, state per key: x joins its key's state.
  void place_in_key(const Key& k, std::uint64_t t, T& x) {
    auto& e = keys_.find_or_insert(k, table::hash(k), [] { return State{}; });
    self().place(e.key, e.value, t, x);
  }
  /// Event time, state per key: closes every key's windows below `upto`.
  void close_keys(std::uint64_t upto) {
    // If a window function throws, the keys not visited yet close on the next
    // watermark (those visited have nothing left below `upto`).
    for (std::size_t i = 0; i < keys_.size();) {
      auto& e = keys_[i];
      self().close(e.key, e.value, closed_, upto);
      if (self().idle(e.value)) keys_.erase_at(i);  // the last key moves to i
      else ++i;
    }
  }

 private:
  using table = troupe::detail::key_table<Key, State>;

  Derived& self() noexcept { return static_cast<Derived&>(*this); }
  void refuse(T& x) {
    late_->fetch_add(1, std::memory_order_relaxed);
    if (late_to_) late_to_(x, this->watermark());
  }

  table keys_;
  std::shared_ptr<std::atomic<std::uint64_t>> late_ = std::make_shared<std::atomic<std::uint64_t>>(0);
  std::function<void(T&, std::uint64_t)> late_to_;
};

template <class T>
struct time_window_state {
  key_clock clock;
  std::uint64_t window = 0;  // the oldest open window
  window_buffer<T> buf;      // elements of the open windows, by time
};
template <class R>
struct time_window_incremental_state {
  key_clock clock;
  open_windows<R> open;  // without watermarks: the key's open windows
};
template <class T, class KeyFn, class F>
using time_window_result =
    window_result<key_of<KeyFn, T>,
                  std::decay_t<std::invoke_result_t<const F&, const key_of<KeyFn, T>&, std::span<const T>>>>;
}  // namespace detail

/// Time windows, whole-window function f(const Key&, std::span<const T>) -> R.
template <class T, class KeyFn, class TimeFn, class F>
class time_window_node
    : public detail::time_window_base<time_window_node<T, KeyFn, TimeFn, F>, T, KeyFn, TimeFn,
                                      detail::time_window_state<T>, detail::time_window_result<T, KeyFn, F>> {
  using base = detail::time_window_base<time_window_node, T, KeyFn, TimeFn, detail::time_window_state<T>,
                                        detail::time_window_result<T, KeyFn, F>>;
  friend base;
  using Key = typename base::Key;
  using state = detail::time_window_state<T>;

 public:
  static constexpr const char* kind = "time_window";
  time_window_node(KeyFn key, TimeFn time, std::uint64_t size, std::uint64_t slide, F f)
      : base{std::move(key), std::move(time), size, slide}, f_{std::move(f)} {}

 private:
  void add(const Key& k, state& s, std::uint64_t t, T& x) {
    // Fire every window that ends at or before t.
    while (!s.buf.empty() && s.window * this->slide_ + this->size_ <= t) fire_oldest(k, s);
    const auto [first, last] = this->windows_of(t);
    if (s.buf.empty()) s.window = std::max(s.window, first);
    if (first > last) return;  // between hopping windows
    s.buf.push(std::move(x));
  }
  void flush(const Key& k, state& s) {
    while (!s.buf.empty()) fire_oldest(k, s);
  }

  // Event time: each key's buffer stays sorted by time.
  void place(const Key& k, std::uint64_t t, std::uint64_t, std::uint64_t, T& x) { this->place_in_key(k, t, x); }
  void close_below(std::uint64_t upto) { this->close_keys(upto); }
  void place(const Key&, state& s, std::uint64_t t, T& x) {
    if (s.buf.empty() || this->time_of(s.buf[s.buf.size() - 1]) <= t) return s.buf.push(std::move(x));
    std::size_t lo = 0, hi = s.buf.size();  // the first element later than t
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (this->time_of(s.buf[mid]) <= t) lo = mid + 1;
      else hi = mid;
    }
    s.buf.insert(lo, std::move(x));
  }
  void close(const Key& k, state& s, std::uint64_t from, std::uint64_t upto) {
    for (std::uint64_t next = from; !s.buf.empty();) {
      const std::uint64_t w =
          std::max(next, detail::first_window_containing(this->time_of(s.buf[0]), this->size_, this->slide_));
      if (w >= upto) break;
      s.window = w;
      next = w + 1;
      fire_oldest(k, s);  // drops the elements that no later window holds
    }
  }
  static bool idle(const state& s) noexcept { return s.buf.empty(); }

  // Fires window `s.window` if it holds anything, then moves to the next one.
  void fire_oldest(const Key& k, state& s) {
    const std::uint64_t start = s.window * this->slide_, end = start + this->size_;
    std::size_t from = 0;
    while (from < s.buf.size() && this->time_of(s.buf[from]) < start) ++from;
    std::size_t n = 0;
    while (from + n < s.buf.size() && this->time_of(s.buf[from + n]) < end) ++n;
    detail::at_scope_exit next{[&] { next_window(s); }};
    if (n != 0)
      this->send_next(detail::time_window_result<T, KeyFn, F>{k, start, end, std::invoke(f_, k, s.buf.range(from, n))});
  }
  void next_window(state& s) {
    ++s.window;
    const std::uint64_t next_start = s.window * this->slide_;
    std::size_t old = 0;
    while (old < s.buf.size() && this->time_of(s.buf[old]) < next_start) ++old;
    s.buf.drop(old);
    // Skip windows that would be empty.
    if (!s.buf.empty())
      s.window =
          std::max(s.window, detail::first_window_containing(this->time_of(s.buf[0]), this->size_, this->slide_));
  }

  F f_;
};

/// Time windows folded element by element: add(R&, const T&), from `init`.
template <class T, class KeyFn, class TimeFn, class R, class Add>
class time_window_incremental_node
    : public detail::time_window_base<time_window_incremental_node<T, KeyFn, TimeFn, R, Add>, T, KeyFn, TimeFn,
                                      detail::time_window_incremental_state<R>,
                                      window_result<detail::key_of<KeyFn, T>, R>> {
  using base =
      detail::time_window_base<time_window_incremental_node, T, KeyFn, TimeFn, detail::time_window_incremental_state<R>,
                               window_result<detail::key_of<KeyFn, T>, R>>;
  friend base;
  using Key = typename base::Key;
  using state = detail::time_window_incremental_state<R>;

 public:
  static constexpr const char* kind = "time_window";
  time_window_incremental_node(KeyFn key, TimeFn time, std::uint64_t size, std::uint64_t slide, R init, Add add)
      : base{std::move(key), std::move(time), size, slide}, init_{std::move(init)}, add_{std::move(add)} {}

 private:
  void add(const Key& k, state& s, std::uint64_t t, T& x) {
    while (!s.open.empty() && s.open.front().first * this->slide_ + this->size_ <= t) emit_front(k, s);
    const auto [lo, hi] = this->windows_of(t);  // hi: the last window starting at or before t
    if (lo > hi) return;                        // between hopping windows
    // Every open window contains t (they start before it and end after it);
    // open the ones that start with it.
    for (std::uint64_t w = s.open.empty() ? lo : std::max(s.open.back().first + 1, lo); w <= hi; ++w)
      s.open.emplace_back(w, init_);
    for (auto& [w, acc] : s.open) std::invoke(add_, acc, std::as_const(x));
  }
  void flush(const Key& k, state& s) {
    while (!s.open.empty()) emit_front(k, s);
  }

  // Event time: the state is per window (a pane: every key's accumulator of
  // one window), not per key. The element joins its open windows (opened as
  // needed), with one hash of its key for all of them.
  // lo..hi: the windows of t still open.
  void place(const Key& k, std::uint64_t, std::uint64_t lo, std::uint64_t hi, T& x) {
    const std::uint64_t h = accumulators::hash(k);
    for (std::uint64_t w = lo; w <= hi; ++w) {
      auto& e = pane_of(w).find_or_insert(k, h, [this] { return init_; });
      std::invoke(add_, e.value, std::as_const(x));
    }
  }
  // Fires the panes below `upto`, oldest first, each in one go; their memory
  // serves the windows that open next.
  void close_below(std::uint64_t upto) {
    while (!panes_.empty() && panes_.front().window < upto) {
      detail::at_scope_exit retire{[&] { retire_front(); }};  // a throwing send ends the window all the same
      auto& p = panes_.front();
      const std::uint64_t start = p.window * this->slide_, end = start + this->size_;
      for (auto& e : p.accs) this->send_next(window_result<Key, R>{e.key, start, end, std::move(e.value)});
    }
  }

  void emit_front(const Key& k, state& s) {
    auto& [w, acc] = s.open.front();
    this->send_next(window_result<Key, R>{k, w * this->slide_, w * this->slide_ + this->size_, std::move(acc)});
    s.open.pop_front();
  }

  using accumulators = troupe::detail::key_table<Key, R>;
  struct pane {
    std::uint64_t window = 0;
    accumulators accs;
  };
  // The pane of window w, opened if need be (panes_ stays sorted by window).
  accumulators& pane_of(std::uint64_t w) {
    if (!panes_.empty() && panes_.back().window == w) return panes_.back().accs;
    auto it = panes_.end();
    while (it != panes_.begin() && std::prev(it)->window >= w) --it;
    if (it != panes_.end() && it->window == w) return it->accs;
    pane p;
    if (!spare_.empty()) {
      p.accs = std::move(spare_.back());
      spare_.pop_back();
    }
    p.window = w;
    return panes_.insert(it, std::move(p))->accs;
  }
  void retire_front() {
    panes_.front().accs.clear();
    spare_.push_back(std::move(panes_.front().accs));
    panes_.erase(panes_.begin());
  }

  R init_;
  Add add_;
  std::vector<pane> panes_;          // event time: the open windows, oldest first
  std::vector<accumulators> spare_;  // the tables of closed windows, cleared
};

template <class T, class KeyFn, class F>
auto count_window(KeyFn key, std::uint64_t size, std::uint64_t slide, F f) {
  return count_window_node<T, KeyFn, F>{std::move(key), size, slide, std::move(f)};
}
template <class T, class KeyFn, class R, class Add>
auto count_window_incremental(KeyFn key, std::uint64_t size, std::uint64_t slide, R init, Add add) {
  return count_window_incremental_node<T, KeyFn, R, Add>{std::move(key), size, slide, std::move(init), std::move(add)};
}
template <class T, class KeyFn, class TimeFn, class F>
auto time_window(KeyFn key, TimeFn time, std::uint64_t size, std::uint64_t slide, F f) {
  return time_window_node<T, KeyFn, TimeFn, F>{std::move(key), std::move(time), size, slide, std::move(f)};
}
template <class T, class KeyFn, class TimeFn, class R, class Add>
auto time_window_incremental(KeyFn key, TimeFn time, std::uint64_t size, std::uint64_t slide, R init, Add add) {
  return time_window_incremental_node<T, KeyFn, TimeFn, R, Add>{std::move(key), std::move(time), size,
                                                                slide,          std::move(init), std::move(add)};
}

}  // namespace troupe::stream
