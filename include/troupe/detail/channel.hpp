// layer: stream
// channel.hpp: the machinery under stream graphs: runners and channels
// (users need stream.hpp and the pattern headers).
//
// A channel is one bounded SPSC ring between one producer replica and one
// consumer replica: N upstream x M downstream replicas are N*M channels, so
// no channel ever has two writers and no router node sits between stages.
// The producer side of a replica (its outlet, outlet.hpp) picks the channel
// with the downstream stage's routing policy.
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
// Invariants:
//   C1 only the producer pushes into a channel, only the consumer pops (the
//      ring's R1-R3, asserted in spsc_ring.hpp);
//   C2 `closed` is set once, after the producer's last push is published
//      (asserted in outlet::close);
//   C3 only the producer clears `waiting`, and only once it has flushed;
//   C4 a runner is run by at most one thread at a time: whoever sets
//      `active` from false to true queues (or signals) it, exactly once.
//
// Backpressure. A push into a full channel parks the element in the outlet's
// overflow (at most the outputs of one input) and the runner stops taking
// input until the overflow is flushed: it yields its worker instead of
// blocking it, so a graph with more nodes than workers never deadlocks.
//
// Watermarks travel beside the elements, not among them (an element costs
// nothing more for them). A channel holds, beside its ring, the producer's
// watermark: a monotonic atomic the producer stores (release) after it has
// published the pushes that precede it. The consumer loads it (acquire)
// FIRST and then counts the elements its ring holds: those include every
// element pushed before the store; the watermark applies once the consumer
// has taken that many more (it may so apply a few elements late, never
// early). A runner's input watermark is the minimum over its input channels
// that have not ended (a closed and drained channel no longer holds it
// back); it is sampled once per pass over the inputs, and only by runners
// that some watermark can reach (runner_base::event_time_, found when the
// graph starts): graphs without watermarks never look at it.
//   C5 only the producer stores `watermark`, never lower than before, and
//      only once the pushes before it are published (outlet::watermark);
//   C6 only the consumer touches the watermark_* consumer fields; it stores
//      `watermark_seen` (the last value it loaded) so that a producer's new
//      watermark is input (has_input) until the consumer has loaded it.
//
// Checkpoint barriers (stream/checkpoint.hpp) travel beside the elements
// too, but at an exact place: a barrier splits the channel's elements into
// those its checkpoint's state includes and those it does not. The producer
// stores, once the pushes before it are published, how many elements it had
// pushed into the channel (`barrier_at`, relaxed) and then the checkpoint's
// id (`barrier`, release). A consumer that loads a new id (acquire) takes
// elements only up to that count; there the channel is *aligning*: it gives
// nothing more until every input of the consumer is at its barrier (or has
// ended); then the consumer snapshots its node, sends the barrier on and
// passes it. At most one checkpoint is in flight (the checkpointer starts
// the next once the last has completed, and it completes only once every
// runner has passed it), so a channel holds at most one pending barrier.
// Under unaligned barriers (checkpoint_options::unaligned) a consumer whose
// elements can be saved never aligns: the first new id it loads on any
// input, it snapshots its node and sends the barrier on at once; from then
// until each input's count is reached, what it takes from that input is
// saved with the state (and replayed into the node on recovery).
//   C7 only the producer stores `barrier` and `barrier_at`, ids increasing,
//      and only once the pushes before it are published (outlet::barrier);
//   C8 only the consumer touches `barrier_seen`, `aligning` and
//      `barrier_in`; an aligning channel's elements are not input
//      (has_input), its new barrier is until the consumer has loaded it.
//
// Metrics. A runner adds up what it takes and emits, and publishes the sums
// (its items in and out) at the end of each batch; but its pushes become
// visible in groups during the batch. So its outlet stores the runner's
// items out, counting everything sent so far, before each ring publish
// (the ring's release store then covers it), and the consumer stores its
// items in (release) only after it has taken the elements they count. A
// reader that loads every runner's items in (acquire) before any runner's
// items out (graph_state::metrics) so never sees a consumer that took more
// than its producers emitted. Markers (tagged.hpp) count on neither side.
//   C9 a producer's items out, as stored, count every element it has made
//      visible in its channels; a consumer's items in, as stored, count only
//      elements it has taken.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "troupe/detail/resumable.hpp"
#include "troupe/detail/tuning.hpp"
#include "troupe/stream/metrics.hpp"
#include "troupe/stream/options.hpp"
#include "troupe/util/affinity.hpp"
#include "troupe/util/cache.hpp"
#include "troupe/util/spsc_ring.hpp"

namespace troupe {
class actor_system;
}
namespace troupe::stream::detail {
struct keyed_env;
}

namespace troupe::detail {

struct graph_state;
class checkpointer;

enum class step_result {
  more,      ///< the batch budget ran out with work left
  blocked,   ///< an output channel is full
  idle,      ///< no input: the runner released itself (do not touch it)
  finished,  ///< ended: do not touch it
};

/// Per-replica settings the graph builder hands to each runner.
struct runner_settings {
  std::size_t replica = 0;                              // index among its stage's replicas
  std::size_t replicas = 1;                             // replicas of its stage
  std::size_t batch = tuning::batch;                    // elements per activation
  std::size_t latency_sample = tuning::latency_sample;  // sinks measure one element in this many
  stream::failure on_error = stream::failure::cancel;
  bool dedicated = false;        // its own thread instead of the scheduler
  affinity cores;                // dedicated: where its thread may run
  std::size_t thread_index = 0;  // dedicated: its index in `cores`
  std::size_t rank = 0;          // the process that runs it (a graph split across processes; edge.hpp)
  std::size_t slot = 0;          // its place in the graph's build order, the same in every process
  std::size_t stage = 0;         // which stage, front to back (metrics)
};

/// What a runner has emitted (its items out), as metrics read it. Only the
/// runner writes it: `total` up to its last publish, and `shown`, which its
/// outlets also store (total + what they sent since) before they make pushes
/// visible (C9).
struct emitted_count {
  std::atomic<std::uint64_t> shown{0};
  std::uint64_t total = 0;
};

/// One node replica: what the scheduler (or its own thread) runs.
class runner_base : public resumable {
 public:
  runner_base(graph_state& g, std::string name, const runner_settings& s)
      : graph_{&g}, name_{std::move(name)}, settings_{s} {}
  virtual ~runner_base() = default;

  /// Queues (or signals) the runner unless it is already active (C4).
  void wake() noexcept {
    if (!active_.load(std::memory_order_relaxed) && !active_.exchange(true, std::memory_order_acq_rel)) launch();
  }
  bool active() const noexcept { return active_.load(std::memory_order_relaxed); }

  resume_result resume(std::size_t) override;
  /// The loop of a dedicated thread; returns when the runner has finished.
  void run_on_thread();
  /// First activation: the graph launches every runner once (on_start).
  void start() noexcept;

  /// Whether watermarks can reach this runner's input (a watermark generator
  /// upstream); set by the graph before it starts its runners.
  bool event_time() const noexcept { return event_time_; }
  /// The node generates watermarks (with_watermarks, emits_watermarks).
  virtual bool generates_watermarks() const noexcept { return false; }
  /// Whether this runner's outputs carry watermarks (it generates them, or
  /// watermarks reach its input).
  bool watermarks_out() const noexcept { return event_time_ || generates_watermarks(); }
  /// Before start: event_time() is true if any producer's outputs carry
  /// watermarks; true if that changed it.
  bool resolve_event_time() noexcept {
    if (event_time_ || !fed_watermarks()) return false;
    event_time_ = true;
    entered_event_time();
    return true;
  }

  /// wake() at stream::now() == t (through the actor system's timer).
  void wake_at(std::uint64_t t) noexcept;
  bool dedicated() const noexcept { return settings_.dedicated; }
  const std::string& name() const noexcept { return name_; }
  stream::node_metrics metrics() const;
  /// Its items in (acquire): a reader loads every consumer's before any
  /// producer's items out (C9).
  std::uint64_t items_in() const noexcept { return items_in_.load(std::memory_order_acquire); }
  /// Its items out, for its outlets to store before they publish (C9).
  emitted_count& emitted() noexcept { return emitted_; }
  const runner_settings& settings() const noexcept { return settings_; }
  /// The builder numbers the stages once every runner is made.
  void set_stage(std::size_t s) noexcept { settings_.stage = s; }
  /// A graph split across processes: whether watermarks reach this runner
  /// is known from the whole graph (edge.hpp), before start.
  void set_event_time() noexcept {
    if (event_time_) return;
    event_time_ = true;
    entered_event_time();
  }
  virtual std::size_t queued() const noexcept { return 0; }
  virtual std::size_t capacity() const noexcept { return 0; }
  virtual std::uint64_t late() const noexcept { return 0; }
  virtual void add_latency(stream::latency_histogram&) const noexcept {}

  // ---- checkpoints (checkpointer.hpp); all before start
  /// The graph takes checkpoints: this runner aligns barriers and
  /// acknowledges them to `c`.
  /// `final_commit`: the graph's last checkpoint at a clean end is heard
  /// (checkpointer::commit_at_end: in one process).
  void set_checkpointer(checkpointer* c, bool final_commit) noexcept {
    checkpoints_ = c;
    entered_checkpoints(final_commit);
  }
  /// The graph resumes from a checkpoint: the node's state then (its
  /// restore() reads it; throws checkpoint_error if it cannot), whether
  /// the runner had finished (it then ends at once: no on_start, no on_stop),
  /// and the elements it is to take again first (unaligned barriers).
  /// (This one: a node without state; src/stream/checkpoint.cpp.)
  virtual void restore_state(std::string_view state, bool ended, std::string_view inflight);
  /// Where its node's keyed states live and save their files.
  virtual void bind_keyed(const stream::detail::keyed_env&) {}
  /// A source: the checkpointer wakes it to start a checkpoint.
  virtual bool starts_checkpoints() const noexcept { return false; }
  /// Its node hears of completed checkpoints (on_checkpoint_complete).
  virtual bool hears_checkpoints() const noexcept { return false; }
  /// The graph has ended cleanly and its final checkpoint `id` is stored:
  /// a node that listens hears of it, after its on_stop (on the thread that
  /// ends the graph). false: the node threw (the graph fails with it).
  virtual bool hear_final_checkpoint(std::uint64_t /*id*/) noexcept { return true; }
  /// Its node declares state (snapshot, restore).
  virtual bool has_state() const noexcept { return false; }
  /// It takes part in checkpoints (the edges of a split graph only pass
  /// barriers on).
  virtual bool checkpointed() const noexcept { return true; }

 protected:
  virtual step_result step(std::size_t budget) = 0;
  /// Some producer of this runner's inputs has watermarks_out().
  virtual bool fed_watermarks() const noexcept { return false; }
  /// event_time() has become true (before start).
  virtual void entered_event_time() noexcept {}
  /// set_checkpointer() has been called (before start).
  virtual void entered_checkpoints(bool /*final_commit*/) noexcept {}
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
  /// A node threw (failure::cancel, or outside an element): records the
  /// exception and cancels the graph.
  void fail(std::exception_ptr e) noexcept;
  /// The graph fails with `e`, described as `err`, and is cancelled.
  void fail(std::exception_ptr e, error err) noexcept;
  /// failure::skip: an element was dropped; reports it (errors_to) and
  /// returns the error that describes it (for its requester, if any).
  error skip(std::exception_ptr e) noexcept;
  /// The error an exception from this node stands for.
  error describe(std::exception_ptr e) const;
  actor_system& system() const noexcept;
  /// The last thing a runner does.
  void finished() noexcept;
  /// Counts `in` elements taken (after taking them: release, C9) and `out`
  /// emitted since the last call.
  void publish(std::uint64_t in, std::uint64_t out) noexcept {
    items_in_.store(items_in_.load(std::memory_order_relaxed) + in, std::memory_order_release);
    emitted_.total += out;
    emitted_.shown.store(emitted_.total, std::memory_order_relaxed);
  }
  /// Blocked time (metrics): an output is full since now, unless already.
  void blocked_from_now() noexcept {
    if (blocked_since_.load(std::memory_order_relaxed) == 0)
      blocked_since_.store(stream::now(), std::memory_order_relaxed);
  }
  /// The output took elements again: the blocked time so far is counted.
  void unblocked() noexcept {
    if (const auto since = blocked_since_.load(std::memory_order_relaxed); since != 0) [[unlikely]]
      count_blocked(since);
  }

  graph_state* graph_;
  std::string name_;  // set before the graph starts

 private:
  void launch() noexcept;

  alignas(cache_line) std::atomic<bool> active_{false};
  std::atomic<std::uint32_t> wakeups_{0};  // dedicated threads sleep on it (a futex word)
  alignas(cache_line) std::atomic<std::uint64_t> items_in_{0};
  emitted_count emitted_;
  std::atomic<std::uint64_t> failed_{0};
  std::atomic<std::uint64_t> blocked_ns_{0};     // single writer: the runner
  std::atomic<std::uint64_t> blocked_since_{0};  // stream::now() when an output filled up; 0: not blocked
  void count_blocked(std::uint64_t since) noexcept;

 protected:
  runner_settings settings_;             // immutable once the graph has started
  bool event_time_ = false;              // idem
  checkpointer* checkpoints_ = nullptr;  // idem (null: the graph takes no checkpoints)
  bool restored_ended_ = false;          // idem: restored as a runner that had finished
};

/// One producer replica -> one consumer replica.
template <class T>
struct channel {
  explicit channel(std::size_t capacity, runner_base* c) : ring{capacity}, consumer{c} {}
  spsc_ring<T> ring;
  runner_base* consumer;
  runner_base* producer = nullptr;                      // null: an entry actor
  alignas(cache_line) std::atomic<bool> closed{false};  // the producer has ended (C2)
  std::atomic<bool> waiting{false};                     // the producer sleeps until there is room (C3)
  std::atomic<bool> drained{false};                     // the consumer has seen the end
  std::atomic<std::size_t> stuck{0};                    // reorder stages: elements it could not take yet
  // Watermarks (see the top of this header). The producer's, stored after
  // the pushes before it are published (C5); 0: none yet.
  alignas(cache_line) std::atomic<std::uint64_t> watermark{0};
  // The consumer's (C6): the last value loaded, the one it waits to apply
  // after `watermark_after` more elements, and the one that applies.
  alignas(cache_line) std::atomic<std::uint64_t> watermark_seen{0};
  std::uint64_t watermark_next = 0;
  std::size_t watermark_after = 0;
  bool watermark_pending = false;
  std::uint64_t watermark_in = 0;
  // Checkpoint barriers (see the top of this header): the producer's latest
  // (C7), and the consumer's view (C8).
  alignas(cache_line) std::atomic<std::uint64_t> barrier{0};
  std::atomic<std::size_t> barrier_at{0};  // elements pushed before it
  alignas(cache_line) std::atomic<std::uint64_t> barrier_seen{0};
  std::atomic<bool> aligning{false};  // at its barrier, waiting for the other inputs
  std::uint64_t barrier_in = 0;       // the last barrier passed

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
  /// A channel from `producer` (null: an entry actor) into this replica.
  virtual channel<T>* connect(std::size_t capacity, runner_base* producer) = 0;
  /// The runner that takes what enters here: the consumer replica itself,
  /// or the edge that sends it to the replica in another process (edge.hpp).
  virtual runner_base& taker() noexcept = 0;
  /// Whether the replica runs in another process.
  virtual bool remote() const noexcept { return false; }

 protected:
  ~port() = default;
};

/// The input channels of a replica (none for a source).
template <class T>
class input_side : public port<T> {
 public:
  channel<T>* connect(std::size_t capacity, runner_base* producer) override {
    inputs_.push_back(std::make_unique<channel<T>>(capacity, owner_));
    inputs_.back()->producer = producer;
    return inputs_.back().get();
  }
  runner_base& taker() noexcept override { return *owner_; }

 protected:
  /// Some producer's outputs carry watermarks.
  bool producers_have_watermarks() const noexcept {
    for (auto& c : inputs_)
      if (c->producer != nullptr && c->producer->watermarks_out()) return true;
    return false;
  }

  runner_base* owner_ = nullptr;
  std::vector<std::unique_ptr<channel<T>>> inputs_;
};
template <>
class input_side<void> {
 protected:
  runner_base* owner_ = nullptr;
};

}  // namespace troupe::detail
