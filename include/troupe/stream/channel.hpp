// channel.hpp: the machinery under stream graphs (users need stream.hpp).
//
// A channel is one bounded SPSC ring between one producer replica and one
// consumer replica: N upstream x M downstream replicas are N*M channels, so
// no channel ever has two writers and no router node sits between stages.
// The producer side of a replica (its outlet) picks the channel with the
// downstream stage's routing policy.
//
// Running and waking. Each node replica (a runner) is a scheduler resumable
// (or a loop on its own thread) with one `active` flag: true while it is
// queued or running. A consumer that finds no input clears the flag, fences,
// and looks at its channels once more; a producer that has published pushes
// (it publishes them in small groups: see outlet::push) reads the flag with a
// plain load and wakes the consumer if it is clear (exchange, then schedule).
// That plain load can miss a consumer that is just going idle (the
// producer's push may still sit in its store buffer when the consumer looks),
// so every producer also fences and re-checks its consumers whenever it ends
// a batch, goes idle, blocks or closes: an element is never stranded for
// longer than one batch of its producer, and no element costs a
// read-modify-write.
//
// Backpressure. A push into a full channel parks the element in the outlet's
// overflow (at most the outputs of one input) and the runner stops taking
// input until the overflow is flushed: it yields its worker instead of
// blocking it, so a graph with more nodes than workers never deadlocks.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/pattern/routing.hpp"
#include "troupe/runtime/resumable.hpp"
#include "troupe/stream/metrics.hpp"
#include "troupe/util/affinity.hpp"
#include "troupe/util/cache.hpp"
#include "troupe/util/spsc_ring.hpp"

namespace troupe {
class actor_system;
}

namespace troupe::stream::detail {

struct graph_state;

enum class step_result {
  more,      ///< the batch budget ran out with work left
  blocked,   ///< an output channel is full
  idle,      ///< no input: the runner released itself (do not touch it)
  finished,  ///< ended: do not touch it
};

/// Per-replica settings the graph builder hands to each runner.
struct runner_settings {
  std::size_t replica = 0;         // index among its stage's replicas
  std::size_t batch = 512;         // elements per activation
  std::size_t latency_sample = 64; // sinks measure one element in this many
  bool dedicated = false;          // its own thread instead of the scheduler
  affinity cores;                  // dedicated: where its thread may run
  std::size_t thread_index = 0;    // dedicated: its index in `cores`
};

/// One node replica: what the scheduler (or its own thread) runs.
class runner_base : public troupe::detail::resumable {
 public:
  runner_base(graph_state& g, std::string name, const runner_settings& s)
      : graph_{&g}, name_{std::move(name)}, settings_{s} {}
  virtual ~runner_base() = default;

  /// Queues (or signals) the runner unless it is already active.
  void wake() noexcept {
    if (!active_.load(std::memory_order_relaxed) && !active_.exchange(true, std::memory_order_acq_rel)) launch();
  }
  bool active() const noexcept { return active_.load(std::memory_order_relaxed); }

  troupe::detail::resume_result resume(std::size_t) override;
  /// The loop of a dedicated thread; returns when the runner has finished.
  void run_on_thread();
  /// First activation: the graph launches every runner once (on_start).
  void start() noexcept;

  /// wake() at stream::now() == t (through the actor system's timer).
  void wake_at(std::uint64_t t) noexcept;
  bool dedicated() const noexcept { return settings_.dedicated; }
  node_metrics metrics() const;
  virtual std::size_t queued() const noexcept { return 0; }
  virtual void add_latency(latency_histogram&) const noexcept {}

 protected:
  virtual step_result step(std::size_t budget) = 0;
  /// Read-only look at the inputs (atomics only): anything to do?
  virtual bool has_input() const noexcept = 0;
  /// Clears `active`, fences and re-checks with `ready` (which may read
  /// atomics and immutable members only). true: really idle (the runner must
  /// not be touched any more); false: it holds itself again.
  template <class Ready>
  bool release_unless(Ready&& ready) noexcept {
    // Once `active_` is clear another thread may run this runner, finish the
    // graph and free it while we still look at the channels: the graph waits
    // for releases in progress before it goes.
    enter_release();
    active_.store(false, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // Ready meanwhile: take ourselves back, unless someone already has.
    const bool idle = !ready() || active_.exchange(true, std::memory_order_acq_rel);
    leave_release();
    return idle;
  }
  bool release() noexcept {
    return release_unless([this] { return has_input(); });
  }
  /// Spins a little while the worker has nothing else to do; true if input
  /// came (for_room: if the blocked output has room again).
  bool linger(bool for_room = false) noexcept;
  virtual bool room_ready() const noexcept { return true; }
  /// Pooled, and the worker has nothing else queued.
  bool may_poll() const noexcept;
  void enter_release() noexcept;
  void leave_release() noexcept;
  bool cancelled() const noexcept;
  /// Records an exception and cancels the graph.
  void fail(std::exception_ptr e) noexcept;
  /// The last thing a runner does.
  void finished() noexcept;
  void publish(std::uint64_t in, std::uint64_t out) noexcept {
    items_in_.store(items_in_.load(std::memory_order_relaxed) + in, std::memory_order_relaxed);
    items_out_.store(items_out_.load(std::memory_order_relaxed) + out, std::memory_order_relaxed);
  }

  graph_state* graph_;

 private:
  void launch() noexcept;

  alignas(cache_line) std::atomic<bool> active_{false};
  std::atomic<std::uint32_t> wakeups_{0};  // dedicated threads sleep on it (a futex word)
  alignas(cache_line) std::atomic<std::uint64_t> items_in_{0};
  std::atomic<std::uint64_t> items_out_{0};
  std::string name_;

 protected:
  const runner_settings settings_;
};

/// One producer replica -> one consumer replica.
template <class T>
struct channel {
  explicit channel(std::size_t capacity, runner_base* c) : ring{capacity}, consumer{c} {}
  spsc_ring<T> ring;
  runner_base* consumer;
  runner_base* producer = nullptr;                      // null: an entry actor
  alignas(cache_line) std::atomic<bool> closed{false};  // the producer has ended
  std::atomic<bool> waiting{false};                     // the producer sleeps until there is room
  std::atomic<bool> drained{false};                     // the consumer has seen the end

  bool has_room() const noexcept { return ring.size() < ring.capacity(); }
  /// Consumer, after taking elements: wakes a producer that waits for room.
  /// Only the producer clears `waiting` (once it has flushed): a wake that
  /// finds it still running must not use the flag up. The fence pairs with
  /// the one in the producer's release: either it sees the room we made, or
  /// we see it has gone idle.
  void room_made() noexcept {
    if (!waiting.load(std::memory_order_relaxed)) return;  // a missed flag is caught at the next batch end
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (producer != nullptr) producer->wake();
  }
};

/// The input side of a consumer replica: producers connect channels to it.
template <class T>
class port {
 public:
  virtual channel<T>* connect(std::size_t capacity) = 0;

 protected:
  ~port() = default;
};

enum class route { single, round_robin, random, keyed, broadcast, least_loaded, branches };

/// What a stage hands to the stage before it: its replicas' ports and the
/// policy that picks among them; or, for stream::branches, one such set per
/// branch (every element goes to each branch).
template <class T>
struct downstream {
  std::vector<port<T>*> ports;
  route kind = route::round_robin;
  std::function<std::size_t(const T&, std::size_t)> pick;  // keyed: the replica of an element
  std::vector<downstream<T>> branches;

  template <class Policy>
  void set_policy(const Policy& p) {
    if constexpr (std::is_same_v<Policy, round_robin>) kind = route::round_robin;
    else if constexpr (std::is_same_v<Policy, random_choice>) kind = route::random;
    else if constexpr (std::is_same_v<Policy, broadcast>) kind = route::broadcast;
    else if constexpr (std::is_same_v<Policy, least_loaded>) kind = route::least_loaded;
    else {
      static_assert(std::is_invocable_r_v<std::size_t, const Policy&, const T&, std::size_t>,
                    "a farm's policy must be a routing marker or callable as (const T&, std::size_t) -> std::size_t");
      kind = route::keyed;
      pick = [p](const T& v, std::size_t n) { return static_cast<std::size_t>(p(v, n)) % n; };
    }
  }
};
template <>
struct downstream<void> {};

/// The producer side of one replica: its channels, its routing, its overflow.
template <class T>
class outlet {
 public:
  /// `self`: the producing runner (null for an entry actor).
  void attach(const downstream<T>& d, std::size_t capacity, runner_base* self) {
    if (!d.branches.empty()) {
      // One outlet per branch, each with its own channels, policy and overflow.
      parts_ = std::vector<outlet<T>>(d.branches.size());  // outlets do not move
      for (std::size_t i = 0; i < parts_.size(); ++i) parts_[i].attach(d.branches[i], capacity, self);
      kind_ = route::branches;
      return;
    }
    for (auto* p : d.ports) {
      chans_.push_back(p->connect(capacity));
      chans_.back()->producer = self;
    }
    // A runner publishes its pushes in groups (see push); an entry actor
    // publishes each one at once.
    publish_every_ = self == nullptr ? 1 : std::clamp<std::size_t>(chans_.empty() ? 1 : chans_[0]->ring.capacity() / 4, 1, 32);
    kind_ = chans_.size() == 1 && d.kind != route::broadcast ? route::single : d.kind;
    pick_ = d.pick;
    if (chans_.empty()) throw std::logic_error("stream: a stage has no downstream replica");
  }

  /// Pushes `v` (or parks it when its channel is full). Order per channel is kept.
  void send(T&& v) {
    // The common case inline: one channel, nothing parked, room.
    if (kind_ == route::single && overflow_.empty() && push(0, std::move(v))) {
      ++sent_;
      return;
    }
    send_slow(std::move(v));
  }

  [[gnu::noinline]] void send_slow(T&& v) {
    ++sent_;
    if (kind_ == route::branches) {
      for (std::size_t i = 0; i + 1 < parts_.size(); ++i) parts_[i].send(T{v});
      return parts_.back().send(std::move(v));
    }
    if (!overflow_.empty()) return park(npos_for(v), std::move(v));
    switch (kind_) {
      case route::branches:
        return;  // handled above
      case route::single:
        return push_or_park(0, std::move(v));
      case route::keyed:
        return push_or_park(pick_(v, chans_.size()), std::move(v));
      case route::broadcast: {
        for (std::size_t i = 0; i + 1 < chans_.size(); ++i) push_or_park(i, T{v});
        return push_or_park(chans_.size() - 1, std::move(v));
      }
      case route::least_loaded: {
        std::size_t best = 0, best_size = SIZE_MAX;
        for (std::size_t i = 0; i < chans_.size(); ++i)
          if (auto s = chans_[i]->ring.pushed_size(); s < best_size) best = i, best_size = s;
        return push_or_park(best, std::move(v));
      }
      case route::round_robin:
      case route::random:
        if (!in_turn([&](std::size_t i) { return push(i, std::move(v)); })) park(npos, std::move(v));
        return;
    }
  }

  /// A copy of `v` to every channel (every replica of every branch), whatever
  /// the policy: punctuations such as watermarks. Order per channel is kept.
  void send_all(T&& v) {
    ++sent_;
    if (kind_ == route::branches) {
      for (std::size_t i = 0; i + 1 < parts_.size(); ++i) parts_[i].send_all(T{v});
      return parts_.back().send_all(std::move(v));
    }
    const bool parked = !overflow_.empty();
    for (std::size_t i = 0; i < chans_.size(); ++i) {
      T copy = i + 1 < chans_.size() ? T{v} : std::move(v);
      if (parked) overflow_.emplace_back(i, std::move(copy));
      else push_or_park(i, std::move(copy));
    }
  }

  /// Pushes `v` only if its channel (for round robin and random: any
  /// channel; for broadcast: every channel) holds fewer than `limit`
  /// elements. `v` is moved from only when it was sent.
  bool send_if(T& v, std::size_t limit) {
    if (kind_ == route::branches) {
      // Every branch must take it; then each one does (consumers only make room).
      for (auto& p : parts_)
        if (!p.would_take(v, limit)) return false;
      for (std::size_t i = 0; i + 1 < parts_.size(); ++i) {
        T copy{v};
        parts_[i].send_if(copy, limit);
      }
      ++sent_;
      return parts_.back().send_if(v, limit);
    }
    if (!overflow_.empty()) return false;
    auto room = [&](std::size_t i) { return chans_[i]->ring.pushed_size() < limit; };
    auto push_v = [&](std::size_t i) {
      if (!push(i, std::move(v))) return false;
      ++sent_;
      return true;
    };
    switch (kind_) {
      case route::single:
        return room(0) && push_v(0);
      case route::keyed: {
        const auto i = pick_(v, chans_.size());
        return room(i) && push_v(i);
      }
      case route::broadcast:
        if (!would_take(v, limit)) return false;  // every channel must have room
        send(std::move(v));
        return true;
      case route::least_loaded:
      case route::round_robin:
      case route::random:
        return in_turn([&](std::size_t i) { return room(i) && push_v(i); });
      case route::branches:
        break;
    }
    return false;
  }

  /// Whether send_if(v, limit) would send now (not for branches).
  bool would_take(const T& v, std::size_t limit) const {
    if (!overflow_.empty()) return false;
    auto room = [&](const channel<T>* c) { return c->ring.pushed_size() < std::min(limit, c->ring.capacity()); };
    switch (kind_) {
      case route::single: return room(chans_[0]);
      case route::keyed: return room(chans_[pick_(v, chans_.size())]);
      case route::broadcast:
        for (auto* c : chans_)
          if (!room(c)) return false;
        return true;
      default:
        for (auto* c : chans_)
          if (room(c)) return true;
        return false;
    }
  }

  bool blocked() const noexcept {
    if (kind_ == route::branches) {
      for (auto& p : parts_)
        if (p.blocked()) return true;
      return false;
    }
    return !overflow_.empty();
  }

  /// Blocked: asks the consumer(s) of the oldest parked element to wake the
  /// producer when they make room. Returns what to re-check after release:
  /// the one channel, or null for "any channel" (round robin and random).
  channel<T>* blocked_on() const noexcept {
    if (kind_ == route::branches) return parts_[blocked_part()].blocked_on();
    const auto i = overflow_.front().first;
    return i != npos ? chans_[i] : nullptr;
  }
  channel<T>* wait_for_room() noexcept {
    if (kind_ == route::branches) return parts_[blocked_part()].wait_for_room();
    waiting_ = true;
    const auto i = overflow_.front().first;
    if (i != npos) {
      chans_[i]->waiting.store(true, std::memory_order_relaxed);
      return chans_[i];
    }
    for (auto* c : chans_) c->waiting.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  /// Atomics and the immutable channel list only: safe after release.
  bool has_room(const channel<T>* c) const noexcept {
    if (c != nullptr) return c->has_room();
    if (kind_ == route::branches) return parts_[blocked_part_.load(std::memory_order_relaxed)].has_room(nullptr);
    for (auto* x : chans_)
      if (x->has_room()) return true;
    return false;
  }

  /// Moves parked elements into their channels; true when none is left.
  bool flush() {
    if (kind_ == route::branches) {
      bool all = true;
      for (auto& p : parts_) all = p.flush() && all;
      return all;
    }
    std::size_t done = 0;
    for (; done < overflow_.size(); ++done) {
      auto& [i, v] = overflow_[done];
      if (i != npos) {
        if (!push(i, std::move(v))) break;
      } else {
        bool ok = false;
        for (std::size_t k = 0; k < chans_.size() && !ok; ++k) ok = push(k, std::move(v));
        if (!ok) break;
      }
    }
    overflow_.erase(overflow_.begin(), overflow_.begin() + static_cast<std::ptrdiff_t>(done));
    if (!overflow_.empty()) return false;
    if (waiting_) {
      waiting_ = false;
      for (auto* c : chans_) c->waiting.store(false, std::memory_order_relaxed);
    }
    return true;
  }

  /// Makes every push visible to its consumer (waking it if idle).
  void publish() noexcept {
    for (auto& p : parts_) p.publish();
    publish_channels();
  }

  /// Publishes, then wakes every consumer that has elements but is idle; see
  /// the file comment.
  void sweep() noexcept {
    for (auto& p : parts_) p.sweep();
    publish_channels();
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (auto* c : chans_)
      if (!c->ring.empty() && !c->consumer->active()) c->consumer->wake();
  }

  /// End of stream on every channel (after the last push).
  void close() noexcept {
    for (auto& p : parts_) p.close();
    publish_channels();
    for (auto* c : chans_) c->closed.store(true, std::memory_order_release);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (auto* c : chans_) c->consumer->wake();
  }

  /// Elements sent since the last call.
  std::uint64_t take_sent() noexcept { return std::exchange(sent_, 0); }
  /// Drops what is parked (cancellation).
  void discard() noexcept {
    for (auto& p : parts_) p.discard();
    overflow_.clear();
  }

 private:
  static constexpr std::size_t npos = SIZE_MAX;

  /// Branches: the first blocked branch, remembered for has_room(), which
  /// other threads may call after the producer has gone idle.
  std::size_t blocked_part() const noexcept {
    std::size_t i = 0;
    while (i + 1 < parts_.size() && !parts_[i].blocked()) ++i;
    blocked_part_.store(i, std::memory_order_relaxed);
    return i;
  }

  std::size_t npos_for(const T& v) {
    switch (kind_) {
      case route::single: return 0;
      case route::keyed: return pick_(v, chans_.size());
      default: return npos;  // broadcast is expanded by park
    }
  }
  void park(std::size_t i, T&& v) {
    if (kind_ == route::broadcast) {
      for (std::size_t k = 0; k + 1 < chans_.size(); ++k) overflow_.emplace_back(k, T{v});
      overflow_.emplace_back(chans_.size() - 1, std::move(v));
      return;
    }
    overflow_.emplace_back(i, std::move(v));
  }
  void push_or_park(std::size_t i, T&& v) {
    if (!push(i, std::move(v))) overflow_.emplace_back(i, std::move(v));
  }
  /// Into channel i; false (v untouched) when full. Pushes are published
  /// (made visible, and an idle consumer woken) in groups of publish_every_,
  /// when the channel is full, and at every batch end, block, pause or close
  /// of the producer (sweep, close): an element waits at most for its
  /// producer's next few pushes, and a consumer that polls an almost empty
  /// channel pulls its index once per group instead of once per element.
  [[gnu::always_inline]] bool push(std::size_t i, T&& v) {
    auto& r = chans_[i]->ring;
    if (r.try_emplace_unpublished(std::move(v))) {
      if (r.unpublished() >= publish_every_) publish(i);
      return true;
    }
    publish(i);  // full: the consumer must see what it holds
    return false;
  }
  void publish(std::size_t i) noexcept {
    if (chans_[i]->ring.publish()) notify(i);
  }
  void publish_channels() noexcept {
    for (std::size_t i = 0; i < chans_.size(); ++i) publish(i);
  }
  void notify(std::size_t i) noexcept {
    auto* c = chans_[i]->consumer;
    if (!c->active()) c->wake();
  }
  /// Offers every channel once, from the next in turn (random: from a
  /// random one), until `take(i)` accepts; false if none did.
  template <class Take>
  bool in_turn(Take&& take) {
    const std::size_t n = chans_.size();
    const std::size_t first = kind_ == route::random ? random_index(n) : next_rr(n);
    for (std::size_t k = 0; k < n; ++k)
      if (take(first + k < n ? first + k : first + k - n)) return true;
    return false;
  }
  std::size_t next_rr(std::size_t n) noexcept {
    auto i = rr_;
    rr_ = rr_ + 1 == n ? 0 : rr_ + 1;
    return i;
  }
  std::size_t random_index(std::size_t n) {
    return std::uniform_int_distribution<std::size_t>{0, n - 1}(rng_);
  }

  std::vector<channel<T>*> chans_;
  route kind_ = route::single;
  std::function<std::size_t(const T&, std::size_t)> pick_;
  std::size_t rr_ = 0;
  std::minstd_rand rng_{std::random_device{}()};
  std::vector<std::pair<std::size_t, T>> overflow_;
  bool waiting_ = false;  // some channel's `waiting` flag is ours to clear
  std::size_t publish_every_ = 1;
  std::uint64_t sent_ = 0;
  std::vector<outlet<T>> parts_;  // route::branches: one outlet per branch
  mutable std::atomic<std::size_t> blocked_part_{0};
};

/// Sinks have no outlet.
template <>
class outlet<void> {
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
};

}  // namespace troupe::stream::detail
