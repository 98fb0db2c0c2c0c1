// layer: stream
// runner.hpp: one replica of a node at work (channel.hpp has the protocol),
// and the reorder stage of ordered farms.
//
// A runner drains its input channels in batches, calls its node's consume()
// (a source's produce()) for each element, and pushes what the node emits
// into its outlet. In a graph that answers actors, or inside an ordered farm,
// its channels carry tagged elements: the runner hands the node the bare
// value and tags each output with the input's reply address and sequence
// number (the tagger below), so nodes are written the same way everywhere.
//
// Watermarks (channel.hpp has the protocol): a runner that watermarks can
// reach drains through drain_pass<true>, which samples its channels'
// watermarks once per pass, applies each once the elements before it are
// taken, tells the node (on_watermark) when the minimum goes up and forwards
// it; every other runner drains through drain_pass<false>, the loop without
// them. A node with periodic watermarks (stream::with_watermarks) emits
// through a stamper that watches its outputs' times.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "troupe/detail/assert.hpp"
#include "troupe/detail/checkpointer.hpp"
#include "troupe/detail/outlet.hpp"
#include "troupe/detail/tagged.hpp"
#include "troupe/detail/tuning.hpp"
#include "troupe/detail/waker.hpp"
#include "troupe/stream/node.hpp"
#include "troupe/stream/state.hpp"
#include "troupe/stream/watermark.hpp"

namespace troupe::detail {

std::string demangle(const char* mangled);

template <class N>
std::string node_name() {
  if constexpr (requires { N::kind; }) return N::kind;
  else return demangle(typeid(N).name());
}

/// The runner's way into the node base classes.
struct node_access {
  template <class Out>
  static void set_target(stream::emitter<Out>& e, emit_target<Out>* t) noexcept {
    e.out_ = t;
  }
  template <class Out>
  static emit_target<Out>* target(stream::emitter<Out>& e) noexcept {
    return e.out_;
  }
  template <class Out>
  static std::uint64_t& resume_at(stream::emitter<Out>& e) noexcept {
    return e.resume_at_;
  }
  template <class Out>
  static void set_halt(stream::emitter<Out>& e, std::size_t* left) noexcept {
    e.halt_ = left;
  }
  template <class In, class Out>
  static void set_context(stream::node<In, Out>& n, const stream::node_context& c) noexcept {
    n.ctx_ = c;
  }
  template <class In, class Out>
  static void set_event_time(stream::node<In, Out>& n) noexcept {
    n.ctx_.event_time = true;
  }
  template <class In, class Out>
  static void set_checkpoints(stream::node<In, Out>& n, bool final_commit) noexcept {
    n.ctx_.checkpoints = true;
    n.ctx_.final_commit = final_commit;
  }
  template <class In, class Out>
  static void set_watermark(stream::node<In, Out>& n, std::uint64_t w) noexcept {
    n.watermark_ = w;
  }
  template <class Out>
  static void allow_watermarks(stream::emitter<Out>& e) noexcept {
    e.emits_watermarks_ = true;
  }
  template <class In, class Out>
  static void set_waker(stream::node<In, Out>& n, std::shared_ptr<runner_waker> w) noexcept {
    n.waker_.w_ = std::move(w);
  }
  template <class In, class Out>
  static bool& held(stream::node<In, Out>& n) noexcept {
    return n.held_;
  }
};

/// A node that waits for something outside the graph (stream/node.hpp: hold).
template <class N>
inline constexpr bool waits = requires { requires N::waits; };

/// A node that generates its own watermarks.
template <class N>
inline constexpr bool emits_watermarks = requires { requires N::emits_watermarks; };

/// What a node with periodic watermarks (stream::with_watermarks) emits
/// into: passes each output on and keeps the largest time; after every
/// `every` outputs, and at a batch end `every_ms` after the last one, sends
/// the watermark (that time - out_of_orderness).
/// `Next` is the concrete (final) type of what it emits into, so that its
/// calls there are direct: one virtual call per element (the node's
/// send into the stamper), not two.
template <class Out, class TimeFn, class Next>
class watermark_stamper final : public emit_target<Out> {
 public:
  watermark_stamper(Next& next, const TimeFn& time, const stream::periodic_watermarks& p)
      : next_{&next}, time_{time}, lag_{p.out_of_orderness}, every_{p.every}, every_ns_{p.every_ms * 1'000'000} {}

  void send_routed(Out&& v) override {
    see(v);
    next_->send(std::move(v));
    counted();
  }
  bool send_if(Out& v, std::size_t limit) override {
    const auto t = time_of(v);
    if (!next_->send_if(v, limit)) return false;
    max_ = std::max(max_, t);
    counted();
    return true;
  }
  void send_all(Out&& v) override {
    see(v);
    next_->send_all(std::move(v));
    counted();
  }
  void watermark(std::uint64_t w) override { next_->watermark(w); }  // the node's own, punctuated

  /// At a batch end.
  void tick() {
    if (every_ns_ == 0) return;
    const auto now = stream::now();
    if (now - last_ < every_ns_) return;
    last_ = now;
    emit();
  }

 private:
  std::uint64_t time_of(const Out& v) const { return static_cast<std::uint64_t>(std::invoke(time_, v)); }
  void see(const Out& v) { max_ = std::max(max_, time_of(v)); }
  void counted() {
    if (every_ != 0 && ++count_ >= every_) {
      count_ = 0;
      emit();
    }
  }
  void emit() {
    if (max_ > lag_) next_->watermark(max_ - lag_);
  }

  Next* next_;
  TimeFn time_;
  std::uint64_t lag_, every_, every_ns_;
  std::uint64_t max_ = 0;    // the largest time emitted
  std::uint64_t count_ = 0;  // outputs since the last watermark by count
  std::uint64_t last_ = 0;   // stream::now() of the last watermark by time
};

struct no_stamper {
  void tick() noexcept {}
};

template <class N, class Next>
struct stamper_for {
  using type = no_stamper;
};
template <class N, class Next>
  requires requires { typename N::watermark_time_type; }
struct stamper_for<N, Next> {
  using type = watermark_stamper<typename N::out_type, typename N::watermark_time_type, Next>;
};

/// What a node in a tagged graph emits into: each output is tagged with the
/// reply address and sequence number of the input being consumed. The last
/// output of an input is held back until consume() returns, so that it can
/// carry the input's `last` flag and take its reply address over (no copy in
/// the usual one-output case); an ordered input that produced nothing leaves
/// a marker, so that the reorder stage does not wait for it.
template <class Out, class Outlet>
class tagger final : public emit_target<Out> {
 public:
  explicit tagger(Outlet& out) noexcept : out_{&out} {}

  /// Before consume(): the input's tag.
  void begin(reply_to& reply, std::uint64_t seq, bool last) noexcept {
    reply_ = &reply;
    seq_ = seq;
    last_ = last;
  }
  /// After consume().
  void end() {
    if (held_) {
      send_held(last_, std::move(*reply_));
    } else if (seq_ != no_seq && last_) {
      out_->send(tagged<Out>{std::nullopt, std::move(*reply_), seq_, true});  // not counted (channel.hpp, C9)
    }
    reply_ = nullptr;
    seq_ = no_seq;
    last_ = true;
  }
  /// Before on_stop: what it emits goes after every ordered element.
  void stopping() noexcept { outside_ = at_end; }

  void send_routed(Out&& v) override {
    if (reply_ == nullptr) {  // outside consume (on_start, on_stop): no input to tag it with
      out_->send(tagged<Out>{std::move(v), {}, outside_, true});
      return;
    }
    if (held_) send_held(false, reply_to{*reply_});
    held_.emplace(std::move(v));
  }
  bool send_if(Out& v, std::size_t limit) override {
    if (held_) send_held(false, copy_reply());
    // Not held back: the caller must know now. If it was the input's last
    // output, end() adds the marker that an ordered farm needs.
    tagged<Out> t{std::move(v), copy_reply(), reply_ != nullptr ? seq_ : outside_, false};
    if (out_->send_if(t, limit)) return true;
    v = std::move(*t.value);
    return false;
  }
  /// Punctuations keep their place: after the outputs of the input being
  /// consumed (or at the start, or at the end).
  void send_all(Out&& v) override {
    if (held_) send_held(false, copy_reply());
    out_->send_all(tagged<Out>{std::move(v), {}, reply_ != nullptr ? seq_ : outside_, false});
  }
  /// After the outputs so far, the one held back included.
  void watermark(std::uint64_t w) override {
    if (held_) send_held(false, copy_reply());
    out_->watermark(w);
  }

 private:
  reply_to copy_reply() const { return reply_ != nullptr ? reply_to{*reply_} : reply_to{}; }
  void send_held(bool last, reply_to r) {
    out_->send(tagged<Out>{std::move(held_), std::move(r), seq_, last});
    held_.reset();
  }

  Outlet* out_;
  std::optional<Out> held_;
  reply_to* reply_ = nullptr;
  std::uint64_t seq_ = no_seq;
  bool last_ = true;
  std::uint64_t outside_ = no_seq;  // the position of outputs outside consume
};

struct no_tagger {
  void stopping() noexcept {}
};

/// What node runners and reorder stages share: the outlet, and the steps
/// that end a batch, block, stop and end. Derived provides step(),
/// has_input() and stop_hook() (on_stop; false if it failed).
template <class Derived, class InE, class Outlet>
class runner_core : public runner_base, public input_side<InE> {
  friend Derived;
  runner_core(graph_state& g, std::string name, const runner_settings& s)
      : runner_base{g, std::move(name), s}, batch_{s.batch} {
    this->owner_ = this;
  }

 public:
  template <class D>
  void attach(const D& d, std::size_t capacity) {
    out_.attach(d, capacity, this);
    out_.halt_into(&left_);
  }

  std::size_t queued() const noexcept override {
    std::size_t n = 0;
    if constexpr (!std::is_void_v<InE>)
      for (auto& c : this->inputs_) n += c->ring.size();
    return n;
  }
  std::size_t capacity() const noexcept override {
    std::size_t n = 0;
    if constexpr (!std::is_void_v<InE>)
      for (auto& c : this->inputs_) n += c->ring.capacity();
    return n;
  }
  bool room_ready() const noexcept override { return out_.has_room(blocked_on_); }

 protected:
  enum class phase { fresh, running, stopping, finished };
  bool stopping() const noexcept { return phase_ == phase::stopping; }

  Derived& self() noexcept { return static_cast<Derived&>(*this); }

  /// What every step does first; nullopt: go on with the step's own work.
  std::optional<step_result> prologue() noexcept {
    if (cancelled()) return end(false);
    if (phase_ == phase::fresh) {
      phase_ = phase::running;
      if (this->restored_ended_) return end(true);  // it had finished at the checkpoint
      if (!self().start_hook()) return end(false);
    }
    if (out_.blocked() && !out_.flush()) return blocked(0);
    if (phase_ == phase::stopping) return end(true);
    return std::nullopt;
  }

  // End of a batch: counters, and wake whoever waits on us (consumers with
  // data, producers with room). Both checks follow a fence.
  void batch_done(std::uint64_t in) noexcept {
    self().batch_end_hook();
    publish(in - self().take_markers(), sent());
    out_.sweep();
    if constexpr (!std::is_void_v<InE>) {
      if (in != 0) {  // we made room: does a producer wait for it?
        if constexpr (std::is_same_v<Outlet, no_outlet>) std::atomic_thread_fence(std::memory_order_seq_cst);
        for (auto& c : this->inputs_) c->room_made();
      }
    }
  }

  // An output channel is full: sleep until its consumer makes room.
  step_result blocked(std::uint64_t in) noexcept {
    batch_done(in);
    blocked_from_now();
    blocked_on_ = out_.blocked_on();
    if (linger(true)) return step_result::blocked;  // room again: retry soon
    // A pooled runner whose worker has nothing else to do polls through the
    // scheduler (cheaper than a sleep and a wake-up per refill); otherwise
    // it sleeps until its consumer makes room. Polling is bounded: a runner
    // blocked for long (a slow consumer) sleeps.
    if (blocked_polls_ < tuning::max_blocked_polls && may_poll()) {
      ++blocked_polls_;
      return step_result::blocked;
    }
    auto* c = out_.wait_for_room();
    if (release_unless([this, c] { return out_.has_room(c) || cancelled(); })) return step_result::idle;
    return step_result::blocked;
  }

  step_result more(std::uint64_t in) noexcept {
    blocked_polls_ = 0;
    unblocked();
    batch_done(in);
    return step_result::more;
  }

  // The input has ended: on_stop, flush what it sent, close the outputs.
  step_result input_ended(std::uint64_t in) noexcept {
    phase_ = phase::stopping;
    if (!self().stop_hook()) return end(false);
    if (auto r = self().stop_held(in)) return *r;
    if (out_.blocked() && !out_.flush()) return blocked(in);
    publish(in - self().take_markers(), 0);
    return end(true);
  }

  step_result end(bool clean) noexcept {
    unblocked();
    if (!clean) out_.discard();
    if (this->checkpoints_ != nullptr) ended_for_checkpoints(clean);
    self().close_keyed();  // a backend's files are let go before the graph can end
    publish(0, sent());
    phase_ = phase::finished;
    out_.close();
    if constexpr (requires { self().disarm_waker(); }) self().disarm_waker();  // before the graph may end
    finished();
    return step_result::finished;
  }

  /// Idle after a batch: linger a little (pool), then let go.
  step_result idle_after(std::uint64_t in) noexcept {
    unblocked();
    batch_done(in);
    if (!this->settings_.dedicated && linger()) return step_result::more;
    return release() ? step_result::idle : step_result::more;
  }

  /// Every input closed and emptied (marks the drained ones).
  bool inputs_ended() noexcept {
    std::size_t open = 0;
    if constexpr (!std::is_void_v<InE>) {
      for (auto& c : this->inputs_) {
        if (c->drained.load(std::memory_order_relaxed)) continue;
        if (c->closed.load(std::memory_order_acquire) && c->ring.empty())
          c->drained.store(true, std::memory_order_relaxed);
        else ++open;
      }
    }
    return open == 0;
  }

  std::uint64_t sent() noexcept { return out_.take_sent(); }

  // ---- watermarks (event-time runners only; channel.hpp, C5 and C6)

  /// Loads c's watermark; a new one applies after the elements c holds now.
  template <class C>
  static void sample_watermark(C& c) noexcept {
    const auto w = c.watermark.load(std::memory_order_acquire);  // first: then the ring holds what came before it
    c.watermark_seen.store(w, std::memory_order_relaxed);
    if (c.watermark_pending || w <= c.watermark_in) return;
    c.watermark_next = w;
    c.watermark_after = c.ring.size();
    c.watermark_pending = true;
  }
  /// c's pending watermark is due: it applies, and the next one is sampled.
  template <class C>
  static void land_watermark(C& c) noexcept {
    do {
      c.watermark_in = c.watermark_next;
      c.watermark_pending = false;
      sample_watermark(c);
    } while (c.watermark_pending && c.watermark_after == 0);
  }
  /// Once per pass over the inputs: marks the channels that have ended,
  /// samples the others, applies what is due. false: the graph is cancelled.
  bool refresh_watermarks() noexcept {
    if constexpr (!std::is_void_v<InE>) {
      for (auto& c : this->inputs_) {
        if (c->drained.load(std::memory_order_relaxed)) continue;
        if (c->closed.load(std::memory_order_acquire) && c->ring.empty()) {
          c->drained.store(true, std::memory_order_relaxed);  // no longer holds the minimum back
          continue;
        }
        sample_watermark(*c);
        if (c->watermark_pending && c->watermark_after == 0) land_watermark(*c);
      }
    }
    return advance_watermark();
  }
  /// `n` elements were taken from c. false: the graph is cancelled.
  template <class C>
  bool took(C& c, std::size_t n) noexcept {
    if (!c.watermark_pending) return true;
    c.watermark_after -= std::min(n, c.watermark_after);
    if (c.watermark_after != 0) return true;
    land_watermark(c);
    return advance_watermark();
  }
  /// The input watermark: the minimum over the channels that have not
  /// ended; when it goes up, the runner acts on it (watermark_advanced).
  bool advance_watermark() noexcept {
    if constexpr (!std::is_void_v<InE>) {
      std::uint64_t low = UINT64_MAX;
      bool live = false;
      for (auto& c : this->inputs_) {
        if (c->drained.load(std::memory_order_relaxed)) continue;
        live = true;
        low = std::min(low, c->watermark_in);
      }
      if (!live || low <= in_watermark_) return true;
      in_watermark_ = low;
      return self().watermark_advanced(low);
    }
    return true;
  }
  /// Chunk limit: stop where c's pending watermark applies.
  template <class C>
  static std::size_t until_watermark(const C& c, std::size_t max) noexcept {
    return c.watermark_pending && c.watermark_after != 0 && c.watermark_after < max ? c.watermark_after : max;
  }
  /// has_input's part (atomics only): a watermark the consumer has not loaded.
  template <class C>
  bool new_watermark(const C& c) const noexcept {
    return this->event_time_ && !c.drained.load(std::memory_order_relaxed) &&
           c.watermark.load(std::memory_order_acquire) != c.watermark_seen.load(std::memory_order_relaxed);
  }

  // ---- checkpoint barriers (checkpointing graphs only; channel.hpp, C7, C8)

  /// Whether c may give elements now (not aligning); lowers `max` to what
  /// it holds before its pending barrier, and marks it aligning when that
  /// is nothing. The published count is loaded first (C7): a barrier stored
  /// before any of those elements is then seen below, and the consumer never
  /// takes an element it has not checked against the barrier (a pass that
  /// saw no barrier takes only what was published before it).
  template <class C>
  bool before_barrier(C& c, std::size_t& max) noexcept {
    if (c.aligning.load(std::memory_order_relaxed)) return false;
    if (const auto avail = c.ring.size(); avail < max) max = avail;
    const auto id = c.barrier.load(std::memory_order_acquire);
    if (id == c.barrier_in) return true;
    c.barrier_seen.store(id, std::memory_order_relaxed);
    const auto left = c.barrier_at.load(std::memory_order_relaxed) - c.ring.taken_total();
    if (left == 0) {
      c.aligning.store(true, std::memory_order_relaxed);
      ++aligning_;
      return false;
    }
    if (left < max) max = left;
    return true;
  }
  /// Every input is at its barrier or has ended (marks the ended ones).
  bool aligned() noexcept {
    if constexpr (!std::is_void_v<InE>) {
      if (aligning_ == 0) return false;
      for (auto& c : this->inputs_) {
        if (c->aligning.load(std::memory_order_relaxed) || c->drained.load(std::memory_order_relaxed)) continue;
        if (!(c->closed.load(std::memory_order_acquire) && c->ring.empty())) return false;
        c->drained.store(true, std::memory_order_relaxed);
      }
      return true;
    }
    return false;
  }
  /// Aligned: the checkpoint of this runner (checkpoint() below), then the
  /// inputs go on.
  bool pass_barrier() noexcept {
    if constexpr (!std::is_void_v<InE>) {
      std::uint64_t id = 0;
      for (auto& c : this->inputs_)
        if (c->aligning.load(std::memory_order_relaxed))
          id = std::max(id, c->barrier_seen.load(std::memory_order_relaxed));
      if (!self().checkpoint(id)) return false;
      for (auto& c : this->inputs_) {
        if (!c->aligning.load(std::memory_order_relaxed)) continue;
        c->barrier_in = c->barrier_seen.load(std::memory_order_relaxed);
        c->aligning.store(false, std::memory_order_relaxed);
      }
      aligning_ = 0;
    }
    return true;
  }
  /// has_input's part (atomics only): a barrier the consumer has not loaded.
  template <class C>
  static bool new_barrier(const C& c) noexcept {
    return c.barrier.load(std::memory_order_acquire) != c.barrier_seen.load(std::memory_order_relaxed);
  }
  /// end(): a clean end leaves the node's final state for every later
  /// checkpoint; any end stops the checkpointer from waking this runner.
  void ended_for_checkpoints(bool clean) noexcept {
    std::string state;
    if (clean && !self().final_state(state)) clean = false;
    try {
      this->checkpoints_->finished(this->settings_.slot, std::move(state), clean);
    } catch (...) {
      this->fail(std::current_exception());
    }
  }
  /// The node's state for checkpoint `id` (0: its final state); Derived's
  /// when its node has one. false: the graph failed.
  bool final_state(std::string&, std::uint64_t = 0) noexcept { return true; }
  /// The node's state for checkpoint `id` into `state`, then the barrier
  /// on to every output channel. false: the graph failed.
  bool snapshot_and_pass(std::uint64_t id, std::string& state) noexcept {
    if (!self().final_state(state, id)) return false;
    out_.barrier(id);
    last_barrier_.store(id, std::memory_order_relaxed);
    return true;
  }
  /// At a barrier (a source: when a checkpoint is requested): the node's
  /// state, then the barrier on to every output channel, then the ack.
  bool checkpoint(std::uint64_t id) noexcept {
    std::string state;
    if (!snapshot_and_pass(id, state)) return false;
    try {
      this->checkpoints_->ack(id, this->settings_.slot, std::move(state));
      return true;
    } catch (...) {
      this->fail(std::current_exception());
      return false;
    }
  }

  // ---- unaligned barriers (options.checkpoint.unaligned; Derived decides
  // which runners: those whose input elements can be saved)

  /// before_barrier's counterpart that never waits: a barrier of a new
  /// checkpoint on c starts this runner's part of it at once
  /// (unaligned_start), and the elements c still holds before it are saved
  /// then and there (Derived::keep_queued), without taking them; `record`
  /// says whether what c gives now comes before its barrier of the pending
  /// checkpoint, its barrier not having come yet (so it is saved as it is
  /// taken). The published count is loaded first, as in before_barrier
  /// (C7): what a pass takes without seeing a barrier came before it.
  /// false: the graph failed.
  template <class C>
  bool unaligned_barrier(C& c, std::size_t& max, bool& record) noexcept {
    if (const auto avail = c.ring.size(); avail < max) max = avail;
    const auto id = c.barrier.load(std::memory_order_acquire);
    if (id != c.barrier_in) {
      c.barrier_seen.store(id, std::memory_order_relaxed);
      if (id > last_barrier_.load(std::memory_order_relaxed) && !unaligned_start(id)) return false;
      const auto left = c.barrier_at.load(std::memory_order_relaxed) - c.ring.taken_total();
      if (left != 0 && !self().keep_queued(c, left)) return false;
      c.barrier_in = id;
    }
    record = pending_ != 0 && c.barrier_in < pending_;
    return true;
  }
  /// The first barrier of checkpoint `id` on any input: the node's state
  /// now, the barrier on to every output; what the inputs still give before
  /// their barriers is saved from here on (inflight_, behind room for its count).
  bool unaligned_start(std::uint64_t id) noexcept {
    std::string state;
    if (!snapshot_and_pass(id, state)) return false;
    try {
      inflight_.assign(sizeof(std::uint64_t), '\0');
    } catch (...) {
      this->fail(std::current_exception());
      return false;
    }
    inflight_count_ = 0;
    pending_state_ = std::move(state);
    pending_ = id;
    return true;
  }
  /// Whether everything c gives before its barrier of the pending
  /// checkpoint is saved: its barrier has come, or c has ended (what it
  /// still holds is saved now: its producer resumes as ended). false:
  /// not yet, or the graph failed (`failed`).
  template <class C>
  bool saved_up_to_barrier(C& c, bool& failed) noexcept {
    if (c.barrier_in >= pending_) return true;
    if (!c.closed.load(std::memory_order_acquire)) return false;
    if (const auto left = c.ring.size(); left != 0 && !self().keep_queued(c, left)) {
      failed = true;
      return false;
    }
    c.barrier_in = pending_;
    return true;
  }
  /// Once every input's elements before its barrier are saved: the ack,
  /// with the node's state and those elements. false: the graph failed.
  bool unaligned_finish() noexcept {
    if constexpr (!std::is_void_v<InE>) {
      bool failed = false;
      for (auto& c : this->inputs_)
        if (!saved_up_to_barrier(*c, failed)) return !failed;  // not yet
      std::string saved;
      if (inflight_count_ != 0) {
        std::memcpy(inflight_.data(), &inflight_count_, sizeof inflight_count_);
        saved = std::move(inflight_);
      }
      inflight_.clear();
      const auto id = std::exchange(pending_, 0);
      try {
        this->checkpoints_->ack(id, this->settings_.slot, std::move(pending_state_), std::move(saved));
      } catch (...) {
        this->fail(std::current_exception());
        return false;
      }
    }
    return true;
  }

  bool start_hook() noexcept { return true; }
  bool stop_hook() noexcept { return true; }
  void close_keyed() noexcept {}
  std::optional<step_result> stop_held(std::uint64_t) noexcept { return std::nullopt; }
  void batch_end_hook() noexcept {}
  /// Markers taken since the last call (not counted as items in; channel.hpp, C9).
  std::uint64_t take_markers() noexcept { return 0; }
  bool fed_watermarks() const noexcept override {
    if constexpr (std::is_void_v<InE>) return false;
    else return this->producers_have_watermarks();
  }

  Outlet out_;
  decltype(std::declval<const Outlet&>().blocked_on()) blocked_on_ = nullptr;
  std::size_t batch_;
  // A source's elements left in its batch, or a consumer's in its run
  // (take_run), counted down in memory: parking (halt_into) and
  // pause_until set it to 1 (the element in progress), so that the loop
  // tests this one count per element instead of a count, the parked flag
  // and the pause.
  std::size_t left_ = 0;
  unsigned blocked_polls_ = 0;  // polls since the last full batch
  phase phase_ = phase::fresh;
  std::size_t cursor_ = 0;
  std::uint64_t in_watermark_ = 0;              // the input watermark applied so far
  std::size_t aligning_ = 0;                    // input channels at their barrier
  std::atomic<std::uint64_t> last_barrier_{0};  // the last checkpoint this runner took part in
  // Unaligned barriers: the checkpoint whose ack waits for the inputs'
  // barriers (0: none), the node's state taken for it, the elements saved.
  std::uint64_t pending_ = 0;
  std::string pending_state_;
  std::string inflight_;
  std::uint64_t inflight_count_ = 0;
};

template <class N, bool Tagged, class Next>
class runner final
    : public runner_core<runner<N, Tagged, Next>, wire<typename N::in_type, Tagged>, outlet_for_t<Next>> {
  using In = typename N::in_type;
  using Out = typename N::out_type;
  using InE = wire<In, Tagged>;
  using Outlet = outlet_for_t<Next>;
  using core = runner_core<runner<N, Tagged, Next>, InE, Outlet>;
  friend core;
  static constexpr bool is_source = std::is_void_v<In>;
  static constexpr bool is_sink = std::is_void_v<Out>;
  static constexpr bool tags = Tagged && !is_sink;
  static constexpr bool measures_latency = is_sink && !is_source && stream::stamped<In>;
  static_assert(!(Tagged && is_source), "a source cannot run inside an ordered farm or after an entry");
  using tagger_type = std::conditional_t<tags, tagger<Out, Outlet>, no_tagger>;
  static constexpr bool generates = !is_sink && emits_watermarks<N>;
  using target_type = std::conditional_t<tags, tagger_type, Outlet>;  // what the node's outputs go into
  using stamper_type = typename stamper_for<N, target_type>::type;
  static constexpr bool stamps = !std::is_same_v<stamper_type, no_stamper>;
  /// The node defines on_idle (the base's does nothing).
  static constexpr bool idles = !is_source && stream::detail::defines_on_idle<N>;
  /// The node waits for something outside the graph (hold, on_wake).
  static constexpr bool holds = waits<N>;
  /// Under unaligned barriers, the elements it takes before its barriers
  /// can be saved (an ordered farm's replicas and reorder stage align).
  static constexpr bool records = !is_source && !Tagged && stream::storable<InE>();

 public:
  runner(graph_state& g, const N& prototype, const runner_settings& s, actor_system& sys)
      : core{g, node_name<N>(), s},
        node_{prototype},
        tag_{make_tagger()},
        stamp_{make_stamper()},
        sample_every_{s.latency_sample == 0 ? 1 : s.latency_sample} {
    node_access::set_context(node_, stream::node_context{&sys, s.replica, s.replicas, false, &keyed_});
    if constexpr (!is_sink) {
      auto& out = static_cast<stream::emitter<Out>&>(node_);
      node_access::set_target(out, &target());
      if constexpr (stamps) node_access::set_target(out, &stamp_);
      if constexpr (generates) node_access::allow_watermarks(out);
      if constexpr (is_source) node_access::set_halt(out, &this->left_);
    }
    if constexpr (measures_latency) latency_ = std::make_unique<stream::latency_histogram>();
    if constexpr (holds) {
      waker_ = std::make_shared<runner_waker>();
      node_access::set_waker(node_, waker_);
    }
  }

  std::uint64_t late() const noexcept override {
    if constexpr (requires(const N& n) {
                    { n.late() } -> std::convertible_to<std::uint64_t>;
                  })
      return node_.late();
    else return 0;
  }
  void add_latency(stream::latency_histogram& h) const noexcept override {
    if (latency_) h.merge(*latency_);
  }
  bool generates_watermarks() const noexcept override { return generates; }

 protected:
  step_result step(std::size_t) override {
    if constexpr (holds)
      if (auto r = wake_step()) return *r;
    if (auto r = this->prologue()) return *r;
    if (this->checkpoints_ != nullptr) [[unlikely]]
      if (auto r = checkpoint_step()) return *r;
    if constexpr (holds)
      if (held()) return hold_park(0);  // in on_start, or still waiting after a checkpoint's turn
    if constexpr (is_source) return produce();
    else return drain();
  }

  bool has_input() const noexcept override {
    const bool aligns = this->checkpoints_ != nullptr;
    if (aligns) [[unlikely]] {
      if constexpr (stream::checkpoint_listener<N>)
        if (this->checkpoints_->completed() > heard_.load(std::memory_order_relaxed)) return true;
      if constexpr (is_source)
        return this->checkpoints_->requested() > this->last_barrier_.load(std::memory_order_relaxed) ||
               this->cancelled();
    }
    if constexpr (!is_source) {
      for (auto& c : this->inputs_) {
        if (aligns) [[unlikely]] {
          if (this->new_barrier(*c)) return true;
          if (c->aligning.load(std::memory_order_relaxed)) continue;  // its elements wait (C8)
        }
        if (!c->ring.empty() ||
            (c->closed.load(std::memory_order_acquire) && !c->drained.load(std::memory_order_relaxed)) ||
            this->new_watermark(*c))
          return true;
      }
    }
    return this->cancelled();
  }

  void entered_event_time() noexcept override { node_access::set_event_time(node_); }
  void entered_checkpoints(bool final_commit) noexcept override { node_access::set_checkpoints(node_, final_commit); }

  /// `state` as final_state wrote it: empty, or u8 flags (1: the node's
  /// own state follows, as u64 + bytes; 2: then its keyed states).
  void restore_state(std::string_view state, bool ended, std::string_view inflight) override {
    const auto who = "node '" + this->name() + "' (slot " + std::to_string(this->settings_.slot) + ")";
    const auto another = [&](const char* what) {
      throw stream::checkpoint_error{"troupe checkpoint: " + who + " " + what + ": it was written by another graph"};
    };
    if (!state.empty()) {
      stream::state_reader in{state, who};
      const auto flags = in.read<std::uint8_t>();
      if (flags > 3) in.fail("unknown flags " + std::to_string(flags));
      if ((flags & 1U) != 0) {
        if constexpr (stream::stateful<N>) {
          stream::state_reader own{in.view_bytes(), who};
          node_.restore(own);
          if (own.left() != 0) own.fail(std::to_string(own.left()) + " byte(s) were left unread by its restore()");
        } else {
          another("keeps no state, but the checkpoint holds some for it");
        }
      } else if constexpr (stream::stateful<N>) {
        if (!ended) another("has state, but the checkpoint holds none for it");
      }
      if ((flags & 2U) != 0) keyed_.load(in);
      if (in.left() != 0) in.fail("bytes after its keyed states");
    } else if constexpr (stream::stateful<N>) {
      if (!ended) another("has state, but the checkpoint holds none for it");
    }
    this->restored_ended_ = ended;
    if (inflight.empty()) return;
    if constexpr (records) {
      stream::state_reader in{inflight, "the elements saved for " + who};
      for (auto n = in.read<std::uint64_t>(); n != 0; --n) {
        InE v{};
        in.read(v);
        replay_.push_back(std::move(v));
      }
      if (in.left() != 0) in.fail("bytes after its last element");
    } else {
      runner_base::restore_state({}, ended, inflight);  // throws: another graph's
    }
  }
  bool starts_checkpoints() const noexcept override { return is_source; }
  bool hears_checkpoints() const noexcept override { return stream::checkpoint_listener<N>; }
  bool hear_final_checkpoint(std::uint64_t id) noexcept override {
    if constexpr (stream::checkpoint_listener<N>) return always([&] { node_.on_checkpoint_complete(id); });
    else return true;
  }
  bool has_state() const noexcept override { return stream::stateful<N>; }
  void bind_keyed(const stream::detail::keyed_env& env) override { keyed_.bind(env); }

 private:
  tagger_type make_tagger() noexcept {
    if constexpr (tags) return tagger_type{this->out_};
    else return {};
  }
  /// What the node's outputs go into (before the stamper, if any).
  target_type& target() noexcept {
    if constexpr (tags) return tag_;
    else return this->out_;
  }
  stamper_type make_stamper() noexcept {
    if constexpr (stamps) return stamper_type{target(), node_.watermark_time(), node_.watermark_policy()};
    else return {};
  }

  void batch_end_hook() noexcept {
    if constexpr (stamps) {
      try {
        stamp_.tick();
      } catch (...) {
        this->fail(std::current_exception());  // out of memory while parking
      }
    }
  }
  /// The input watermark went up to w: the node hears of it (what it sends
  /// goes first), then its outputs carry it (unless it makes its own).
  bool watermark_advanced(std::uint64_t w) noexcept {
    node_access::set_watermark(node_, w);
    if (!element([&] { node_.on_watermark(w); }, nullptr)) return false;
    if constexpr (!is_sink && !generates) this->out_.watermark(w);
    return true;
  }

  bool start_hook() noexcept {
    if constexpr (holds) waker_->arm(*this);
    return always([&] {
      node_.on_start();
      if (auto names = keyed_.unclaimed(); !names.empty())
        throw stream::checkpoint_error{"troupe checkpoint: the checkpoint holds keyed state " + names + " of node '" +
                                       this->name() + "' (slot " + std::to_string(this->settings_.slot) +
                                       "), which its on_start did not ask for (keyed())"};
    });
  }
  bool stop_hook() noexcept {
    tag_.stopping();
    return always([&] { node_.on_stop(); });
  }
  void close_keyed() noexcept { keyed_.close(); }

  // ---- a node that holds (stream/node.hpp: hold, waker, on_wake)

  /// Before the runner ends (end): no wake reaches it afterwards.
  void disarm_waker() noexcept {
    if constexpr (holds) waker_->disarm();
  }

  bool& held() noexcept { return node_access::held(node_); }
  /// Whether the node holds now (false, at compile time, unless it waits).
  bool holding() noexcept {
    if constexpr (holds) return held();
    else return false;
  }
  /// Parks until the node's waker is woken (or the graph is cancelled).
  step_result hold_park(std::uint64_t in) noexcept {
    this->batch_done(in);
    if (this->release_unless([this] { return waker_->fired() || this->cancelled() || checkpoint_due(); }))
      return step_result::idle;
    return step_result::more;
  }
  /// Work of a checkpoint for this node while it holds: a source's barrier
  /// to send, a completion for a node that listens. (A node that holds
  /// takes no input, so other nodes' barriers wait in its channels.)
  bool checkpoint_due() const noexcept {
    if (this->checkpoints_ == nullptr) return false;
    if constexpr (stream::checkpoint_listener<N>)
      if (this->checkpoints_->completed() > heard_.load(std::memory_order_relaxed)) return true;
    if constexpr (is_source)
      return this->checkpoints_->requested() > this->last_barrier_.load(std::memory_order_relaxed);
    return false;
  }
  /// First thing in a step of a node that holds: still waiting (park
  /// again, unless a checkpoint needs it: then the step goes on to
  /// checkpoint_step, still holding), or woken (on_wake, then on with the
  /// step unless it holds again).
  std::optional<step_result> wake_step() noexcept {
    if (!held() || this->cancelled()) return std::nullopt;  // cancelled: the prologue ends it
    if (!waker_->take_fired()) {
      // (Not in on_stop: the prologue would end a node that still holds.)
      if (checkpoint_due() && !this->stopping()) return std::nullopt;
      return hold_park(0);
    }
    held() = false;
    if (!always([&] { node_.on_wake(); })) return this->end(false);
    if (held()) return hold_park(0);
    return std::nullopt;
  }
  /// on_stop held: the outputs close once the node lets go (the prologue
  /// ends the runner then, in the stopping phase).
  std::optional<step_result> stop_held(std::uint64_t in) noexcept {
    if (holding()) return hold_park(in);
    return std::nullopt;
  }
  std::uint64_t take_markers() noexcept { return std::exchange(markers_seen_, 0); }

  // ---- checkpoints (checkpointer.hpp)

  /// The node's state now, for checkpoint `id` (0: its final state): empty
  /// for a node without, else u8 flags (1: its own state follows, u64 +
  /// bytes; 2: then its keyed states, which a final state leaves out: a
  /// runner restored as ended never runs its node again).
  bool final_state(std::string& state, std::uint64_t id = 0) noexcept {
    const bool keyed = id != 0 && !keyed_.empty();
    if (!stream::stateful<N> && !keyed) return true;
    return always([&] {
      stream::state_writer out{state, id};
      out.write(static_cast<std::uint8_t>((stream::stateful<N> ? 1U : 0U) | (keyed ? 2U : 0U)));
      if constexpr (stream::stateful<N>) {
        // Its length goes before it, filled in afterwards (no copy of a large state).
        const auto at = state.size();
        out.write(std::uint64_t{0});
        node_.snapshot(out);
        const auto n = static_cast<std::uint64_t>(state.size() - at - sizeof(std::uint64_t));
        std::memcpy(state.data() + at, &n, sizeof n);
      }
      if (keyed) keyed_.save(out, id);
    });
  }
  /// First in a step of a checkpointing graph: a completed checkpoint the
  /// node hears of, a barrier a source starts; a paced source woken for one
  /// goes back to its pause.
  [[gnu::noinline]] std::optional<step_result> checkpoint_step() noexcept {
    if constexpr (stream::checkpoint_listener<N>) {
      const auto done = this->checkpoints_->completed();
      if (done > heard_.load(std::memory_order_relaxed)) {
        heard_.store(done, std::memory_order_relaxed);
        if (!always([&] { node_.on_checkpoint_complete(done); })) return this->end(false);
      }
    }
    if constexpr (is_source) {
      const auto id = this->checkpoints_->requested();
      if (id > this->last_barrier_.load(std::memory_order_relaxed) && !this->checkpoint(id)) return this->end(false);
      if (paused_until_ != 0) {
        if (stream::now() < paused_until_) return pause(paused_until_);
        paused_until_ = 0;
      }
      if (this->out_.blocked()) return this->blocked(0);
    }
    return std::nullopt;
  }

  /// on_start, on_stop: a failure ends the graph whatever options.on_error says.
  template <class F>
  bool always(F&& f) noexcept {
    try {
      f();
      return true;
    } catch (...) {
      this->fail(std::current_exception());
      return false;
    }
  }

  /// One element (consume, produce), under options.on_error; false: the
  /// graph is cancelled, stop now.
  template <class F>
  bool element(F&& f, reply_to* reply) noexcept {
    try {
      f();
      return true;
    } catch (...) {
      auto e = std::current_exception();
      if (this->settings_.on_error == stream::failure::skip) {
        const error err = this->skip(e);
        if (reply != nullptr) answer_failure(*reply, err);
        return true;
      }
      if (reply != nullptr) answer_failure(*reply, this->describe(e));
      this->fail(e);
      return false;
    }
  }
  static void answer_failure(reply_to& r, const error& e) noexcept {
    try {
      r.fail(e);
    } catch (...) {
      // Out of memory: the requester's timeout must do.
    }
  }

  step_result produce() noexcept {
    if constexpr (is_source) {
      // The per-element loop is the hot path of every source: one count
      // down in memory, which a park or a pause cuts short (left_), is its
      // only test besides the node's own (a subtract that sets the flags
      // and a branch).
      if constexpr (!is_sink)  // a pause that a park's return came before
        if (node_access::resume_at(static_cast<stream::emitter<Out>&>(node_)) != 0) return paused();
      auto& left = this->left_;
      left = std::max<std::size_t>(this->batch_, 1);
      do {
        bool going = true;
        if (!element([&] { going = node_.produce(); }, nullptr)) return this->end(false);
        if (!going) return this->input_ended(0);
        if constexpr (holds)
          if (held()) return hold_park(0);
      } while (--left != 0);
      if (this->out_.blocked()) return this->blocked(0);
      if constexpr (!is_sink) {  // a source that is also a sink (a whole chain) cannot pace itself
        if (node_access::resume_at(static_cast<stream::emitter<Out>&>(node_)) != 0) return paused();
      }
    }
    return this->more(0);
  }

  [[gnu::noinline, gnu::cold]] step_result paused() noexcept {
    return pause(std::exchange(node_access::resume_at(static_cast<stream::emitter<Out>&>(node_)), 0));
  }
  // A paced source is ahead: come back at `t`, but not sooner than
  // min_pause_ns from now. A source paced faster than one element per pause
  // thus sends what has come due in bursts (as CAF's timer-driven sources
  // do) instead of polling the clock through the scheduler between elements,
  // which kept a worker busy whatever the rate.
  step_result pause(std::uint64_t t) noexcept {
    this->batch_done(0);
    const auto now = stream::now();
    if (t <= now) return step_result::more;
    t = std::max(t, now + tuning::min_pause_ns);
    if (this->dedicated()) {
      for (std::uint64_t n; !this->cancelled() && (n = stream::now()) < t;)
        std::this_thread::sleep_for(std::chrono::nanoseconds{std::min<std::uint64_t>(t - n, 1'000'000)});
      return step_result::more;
    }
    // The timer goes first; if it fires before we have let go, the
    // re-check below sees the time has come and we keep running.
    paused_until_ = t;  // a checkpoint may wake it sooner (checkpoint_step)
    this->wake_at(t);
    if (this->release_unless([t] { return stream::now() >= t; })) return step_result::idle;
    return step_result::more;
  }

  /// One input element; false: the graph is cancelled. Sample: measure its
  /// latency here (sample_each); a tagged one is measured here always.
  template <bool Sample = false, class E = InE>
    requires(!std::is_void_v<E>)
  bool take(E& v) noexcept {
    if constexpr (Tagged) {
      if (!v.value) {  // an ordered input that produced nothing upstream
        ++markers_seen_;
        if constexpr (tags) {
          tag_.begin(v.reply, v.seq, v.last);
          tag_.end();
        }
        return true;
      }
      if constexpr (measures_latency) sample(*v.value);
      if constexpr (tags) tag_.begin(v.reply, v.seq, v.last);
      const bool go = element([&] { node_.consume(*v.value); }, &v.reply);
      if constexpr (tags) end_item();
      return go;
    } else {
      if constexpr (Sample && measures_latency) sample(v);
      return element([&] { node_.consume(v); }, nullptr);
    }
  }
  void end_item() noexcept {
    try {
      tag_.end();
    } catch (...) {
      this->fail(std::current_exception());  // out of memory while parking
    }
  }
  /// A run of n >= 1 input elements; returns how many it took and
  /// destroyed (drain_pass, spsc_ring::take_runs). A runner with an outlet
  /// counts them down in left_, which a park sets to 1 (halt_into): one
  /// subtract and branch per element, where a pointer test and the parked
  /// flag's were two each. A sink, which cannot park, walks the pointers.
  template <bool Sample>
  std::size_t take_run(InE* first, std::size_t n, bool& failed) noexcept {
    InE* p = first;
    if constexpr (is_sink) {
      for (InE* end = first + n; p != end;) {
        const bool ok = take<Sample>(*p);
        if constexpr (!std::is_trivially_destructible_v<InE>) std::destroy_at(p);
        ++p;
        if (!ok) [[unlikely]] {
          failed = true;
          break;
        }
      }
    } else {
      if (this->out_.blocked()) return 0;  // parked by the last element of the run before
      auto& left = this->left_;
      left = n;
      do {
        if (!take<Sample>(*p)) [[unlikely]] {
          failed = true;
          left = 1;
        }
        std::destroy_at(p++);
      } while (--left != 0);
    }
    return static_cast<std::size_t>(p - first);
  }

  template <class T>
  void sample(const T& v) noexcept {
    // Counted down in memory: one subtract that sets the flags and a branch
    // per element (a count up compared with sample_every_ was five).
    if (--sample_left_ == 0) {
      sample_left_ = sample_every_;
      record_latency(v);
    }
  }
  template <class T>
  void record_latency(const T& v) noexcept {
    latency_->record(stream::now() - static_cast<std::uint64_t>(v.stamp));
  }
  /// A sink of bare stamped values that measures one element in fewer than
  /// drain_chunk does so per element (take<true>); runs that short would
  /// cost more than the test (sample_cap).
  bool sample_each() const noexcept {
    if constexpr (measures_latency && !Tagged) return sample_every_ < tuning::drain_chunk;
    else return false;
  }
  /// Otherwise it measures per run, not per element: the element due
  /// (sample_left_ == 1) is measured as the run's first, before it is
  /// taken, and a run ends before the next one due. Returns the run's new
  /// bound; drain_pass then counts what the run took.
  template <class Ring>
  std::size_t sample_cap(Ring& ring, std::size_t max) noexcept {
    if (max == 0) return 0;
    if (sample_left_ == 1) {
      const auto* v = ring.front();
      if (v == nullptr) return 0;  // empty
      record_latency(*v);
      sample_left_ = sample_every_ + 1;  // this one is taken next
    }
    return std::min(max, sample_left_ - 1);
  }

  step_result drain() noexcept {
    if constexpr (!is_source) {
      if (this->checkpoints_ != nullptr) {
        if constexpr (records)
          if (!replay_.empty()) [[unlikely]]
            if (auto r = replay()) return *r;
        return drain_pass<false, true>();
      }
      if (this->event_time_) return drain_pass<true, false>();
      return drain_pass<false, false>();
    }
    return step_result::more;
  }

  /// Resumed under unaligned barriers: the elements saved with the state
  /// go to the node first. nullopt: all of them have.
  [[gnu::noinline, gnu::cold]] std::optional<step_result> replay() noexcept {
    if constexpr (records) {
      std::uint64_t in = 0;
      while (!replay_.empty()) {
        if (!take(replay_.front())) return this->end(false);
        replay_.pop_front();
        ++in;
        if constexpr (holds)
          if (held()) return hold_park(in);
        if (this->out_.blocked()) return this->blocked(in);
        if (in == this->batch_) return this->more(in);
      }
    }
    return std::nullopt;
  }
  /// Unaligned barriers: v comes before its input's barrier and after this
  /// runner's snapshot: saved (before the node takes it). false: the graph failed.
  template <class E = InE>
    requires(!std::is_void_v<E>)
  bool keep(const E& v) noexcept {
    return keep_all([&](stream::state_writer& out) {
      out.write(v);
      return std::size_t{1};
    });
  }
  /// The same for the oldest `n` elements c holds, left in it.
  template <class C>
  bool keep_queued(C& c, std::size_t n) noexcept {
    return keep_all([&](stream::state_writer& out) {
      if constexpr (records) c.ring.peek(n, [&](const InE& v) { out.write(v); });
      return n;
    });
  }
  template <class Write>
  bool keep_all(Write&& write) noexcept {
    if constexpr (records) {
      try {
        stream::state_writer out{this->inflight_};
        this->inflight_count_ += write(out);
        return true;
      } catch (...) {
        this->fail(std::current_exception());
        return false;
      }
    }
    return true;
  }

  /// Timed: watermarks reach this runner; Aligned: the graph takes
  /// checkpoints (the runner aligns barriers, or with unaligned barriers
  /// saves what comes before them, and looks at event_time_ for
  /// watermarks). The loop is the same without either.
  template <bool Timed, bool Aligned>
  step_result drain_pass() noexcept {
    if constexpr (!is_source) {
      std::uint64_t in = 0;
      auto& inputs = this->inputs_;
      const std::size_t n = inputs.size();
      const bool timed = Timed || (Aligned && this->event_time_);
      const bool unaligned = records && Aligned && this->checkpoints_->unaligned();
      for (;;) {
        if (timed) {
          if (!this->refresh_watermarks()) return this->end(false);
          if (this->out_.blocked()) return this->blocked(in);
        }
        bool any = false;
        for (std::size_t k = 0; k < n; ++k) {
          auto& c = *inputs[this->cursor_];
          auto& ring = c.ring;
          bool failed = false;
          std::size_t max = std::min(tuning::drain_chunk, this->batch_ - in);
          if (timed) max = this->until_watermark(c, max);
          [[maybe_unused]] bool record = false;
          if constexpr (Aligned) {
            if (unaligned) {
              if (!this->unaligned_barrier(c, max, record)) return this->end(false);
            } else if (!this->before_barrier(c, max)) {
              if (++this->cursor_ == n) this->cursor_ = 0;
              continue;
            }
          }
          const bool each = sample_each();
          if constexpr (measures_latency && !Tagged)
            if (!each) max = sample_cap(ring, max);
          std::size_t got;
          if (!holds && !record) {
            got = each ? ring.take_runs(
                             max, [&](InE* first, std::size_t n) noexcept { return take_run<true>(first, n, failed); })
                       : ring.take_runs(max, [&](InE* first, std::size_t n) noexcept {
                           return take_run<false>(first, n, failed);
                         });
          } else {
            got = ring.consume(max, [&](InE& v) noexcept {
              if constexpr (Aligned && records) {
                if (record && !keep(v)) [[unlikely]] {
                  failed = true;
                  return false;
                }
              }
              if (!(each ? take<true>(v) : take<false>(v))) {
                failed = true;
                return false;
              }
              if constexpr (holds) return !this->out_.blocked() && !held();
              else return !this->out_.blocked();
            });
          }
          in += got;
          if constexpr (measures_latency && !Tagged)
            if (!each) sample_left_ -= got;
          if (got != 0) any = true;
          if (failed) return this->end(false);
          if (timed)
            if (!this->took(c, got)) return this->end(false);
          if constexpr (holds)
            if (held()) return hold_park(in);
          if (this->out_.blocked()) return this->blocked(in);
          if (in == this->batch_) return this->more(in);
          if (++this->cursor_ == n) this->cursor_ = 0;
        }
        if constexpr (Aligned) {
          if (unaligned) {
            if (this->pending_ != 0 && !this->unaligned_finish()) return this->end(false);
          } else if (this->aligned()) {
            if (!this->pass_barrier()) return this->end(false);
            if (this->out_.blocked()) return this->blocked(in);
            continue;
          }
        }
        if (any) continue;
        if (this->inputs_ended()) return this->input_ended(in);
        // Wait a little for more before ending the batch: when producer and
        // consumer run neck and neck, this keeps the per-batch fences off the
        // per-element path. Producers sleeping for room are woken first (the
        // fenced check follows in batch_done if the wait ends empty).
        // Pooled runners end the activation instead (idle_after), so that the
        // runners sharing their worker get their turn.
        if (!this->settings_.dedicated) break;
        this->out_.publish();
        if (in != 0)
          for (auto& c : inputs) c->room_made();
        if (!this->linger()) break;
        if (this->cancelled()) return this->end(false);
      }
      if constexpr (idles) {
        if (!element([&] { node_.on_idle(); }, nullptr)) return this->end(false);
        if constexpr (holds)
          if (held()) return hold_park(in);
        if (this->out_.blocked()) return this->blocked(in);
      }
      return this->idle_after(in);
    }
    return step_result::more;
  }

  stream::detail::keyed_home keyed_;  // before node_: a node may reach its keyed states until it goes
  N node_;
  std::atomic<std::uint64_t> heard_{0};                        // the last completed checkpoint its node heard of
  std::deque<std::conditional_t<records, InE, char>> replay_;  // unaligned: saved elements to take first
  std::uint64_t paused_until_ = 0;                             // a paced source: when its pause ends (0: none)
  std::shared_ptr<runner_waker> waker_;                        // a node that holds
  tagger_type tag_;
  stamper_type stamp_;
  std::uint64_t markers_seen_ = 0;
  std::size_t sample_every_;
  std::size_t sample_left_ = sample_every_;  // elements taken until the next measured one, it included
  std::unique_ptr<stream::latency_histogram> latency_;
};

/// An ordered farm's last stage: takes the replicas' outputs in the order of
/// the farm's input. Each replica's channel holds its outputs in that order,
/// so the next element due is always at the head of one channel: the stage
/// looks at the heads and takes from the one whose sequence number is due.
/// What replicas emit in on_start goes at once, what they emit in on_stop
/// after every numbered element. It keeps no buffer of its own: an element
/// that is not due stays in its channel, and backpressure holds back the
/// replicas that are ahead.
template <class Out, bool Tagged, class Next>
class reorder_runner final : public runner_core<reorder_runner<Out, Tagged, Next>, tagged<Out>, outlet_for_t<Next>> {
  using core = runner_core<reorder_runner<Out, Tagged, Next>, tagged<Out>, outlet_for_t<Next>>;
  friend core;

 public:
  reorder_runner(graph_state& g, const runner_settings& s) : core{g, "reorder", s} {}

 protected:
  step_result step(std::size_t) override {
    if (auto r = this->prologue()) return *r;
    return drain();
  }

  // A channel whose head is not due yet is not input: only a new head (after
  // a pop, which only this stage does) or an element in an empty channel is.
  bool has_input() const noexcept override {
    for (auto& c : this->inputs_) {
      if (this->checkpoints_ != nullptr) {
        if (this->new_barrier(*c)) return true;
        if (c->aligning.load(std::memory_order_relaxed)) continue;
      }
      const bool empty = c->ring.empty();
      if (!empty && c->stuck.load(std::memory_order_relaxed) == 0) return true;
      if (empty && c->closed.load(std::memory_order_acquire) && !c->drained.load(std::memory_order_relaxed))
        return true;
      if (this->new_watermark(*c)) return true;
    }
    return this->cancelled();
  }

 private:
  /// Every replica's watermark applies once the elements before it have been
  /// taken from its channel, so what leaves after the minimum is not older.
  bool watermark_advanced(std::uint64_t w) noexcept {
    this->out_.watermark(w);
    return true;
  }

  step_result drain() noexcept {
    std::uint64_t in = 0;
    for (;;) {
      if (this->event_time_) {
        if (!this->refresh_watermarks()) return this->end(false);
        if (this->out_.blocked()) return this->blocked(in);
      }
      bool any = false;
      for (auto& c : this->inputs_) {
        std::size_t limit = SIZE_MAX;  // elements before its barrier
        if (this->checkpoints_ != nullptr && !this->before_barrier(*c, limit)) continue;
        auto& ring = c->ring;
        bool stuck = false;
        for (; limit != 0; --limit) {
          auto* e = ring.front();
          if (e == nullptr) break;
          if (!due(e->seq)) {
            TROUPE_ASSERT(e->seq > expected_, "an ordered farm's element arrived twice");
            stuck = true;
            break;
          }
          if (!forward(*e)) return this->end(false);
          ring.pop();
          ++in;
          any = true;
          if (this->event_time_ && !this->took(*c, 1)) return this->end(false);
          if (this->out_.blocked() || in >= this->batch_) break;
        }
        c->stuck.store(stuck ? 1 : 0, std::memory_order_relaxed);
        if (this->out_.blocked()) return this->blocked(in);
        if (in >= this->batch_) return this->more(in);
      }
      if (this->checkpoints_ != nullptr && this->aligned()) {
        if (!this->pass_barrier()) return this->end(false);
        if (this->out_.blocked()) return this->blocked(in);
        continue;
      }
      if (any) continue;
      if (this->inputs_ended()) return this->input_ended(in);
      if (all_closed() && skip_gap()) continue;
      break;
    }
    return this->idle_after(in);
  }

  bool due(std::uint64_t seq) noexcept {
    if (seq == no_seq || seq == expected_) return true;
    if (seq != at_end) return false;
    if (ending_) return true;
    // on_stop's outputs: once every replica has sent all its numbered ones.
    for (auto& c : this->inputs_) {
      auto* head = c->ring.front();
      if (head == nullptr ? !c->closed.load(std::memory_order_acquire) : head->seq != at_end) return false;
    }
    ending_ = true;
    return true;
  }

  bool forward(tagged<Out>& e) noexcept {
    if (e.seq < at_end && e.last) ++expected_;
    if (!e.value) {  // a marker: its item produced nothing
      ++markers_;
      return true;
    }
    try {
      if constexpr (Tagged) this->out_.send(tagged<Out>{std::move(e.value), std::move(e.reply), no_seq, true});
      else this->out_.send(std::move(*e.value));
      return true;
    } catch (...) {
      this->fail(std::current_exception());
      return false;
    }
  }

  bool all_closed() const noexcept {
    for (auto& c : this->inputs_)
      if (!c->closed.load(std::memory_order_acquire)) return false;
    return true;
  }
  // Every replica has ended and no head is due: an item is missing (only a
  // cancelled graph loses one). Go on from the earliest head rather than
  // hold the rest back forever.
  bool skip_gap() noexcept {
    std::uint64_t lowest = at_end;
    for (auto& c : this->inputs_)
      if (auto* e = c->ring.front(); e != nullptr && e->seq < lowest) lowest = e->seq;
    if (lowest == at_end || lowest == expected_) return false;
    expected_ = lowest;
    return true;
  }

  std::uint64_t take_markers() noexcept { return std::exchange(markers_, 0); }

  std::uint64_t expected_ = 0;
  bool ending_ = false;        // every numbered element has gone
  std::uint64_t markers_ = 0;  // taken since the last batch end
};

}  // namespace troupe::detail
