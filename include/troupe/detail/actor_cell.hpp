// layer: actor
// actor_cell.hpp: the part every actor shares, whatever runs it: the mailbox,
// the reference count, links and monitors, and the exit protocol.
//
// The mailbox is two intrusive lock-free MPSC queues (urgent, normal) and one
// 64-bit word that packs: bits 0-31 the handle count, bits 32-62 the number of
// messages not yet consumed, bit 63 "closed" (the actor has ended). Senders do
// one fetch_add on the word and one exchange on a queue (a handler's chain of
// messages to one receiver, one of each for the whole chain: send_group); the
// sender that finds the mailbox empty schedules the actor. The same word says
// when the actor can be freed (no handle, no message) and how long its
// mailbox is (send_if).
// Users never touch this class directly; they use actor handles and the
// event_actor / blocking_actor APIs.
//
// Invariants of the word (checked by TROUPE_ASSERT in debug and sanitizer
// builds):
//   M1 the handle count never goes below zero (a release has a reference);
//   M2 the message count never goes below zero (only announced messages are
//      settled) and never reaches bit 63 (2^31 messages at most);
//   M3 "closed" is set once, by terminate() or by the last release of a
//      cell that never ran again (unreachable), and never cleared;
//   M4 the cell is freed exactly when the word reaches "closed, no handle, no
//      message" (or zero, for a cell that never ran).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "troupe/actor/actor.hpp"
#include "troupe/actor/error.hpp"
#include "troupe/actor/message.hpp"
#include "troupe/detail/assert.hpp"
#include "troupe/detail/mpsc_queue.hpp"
#include "troupe/detail/resumable.hpp"
#include "troupe/detail/tuning.hpp"

namespace troupe {

class actor_system;
class actor_cell;

namespace detail {
/// Sends grouped per receiver, one group per thread. While an actor's
/// handler runs, a send to the receiver of its previous send starts a chain:
/// that message and the following ones to the same receiver are linked
/// together and enqueued in one step (one count update, one queue exchange,
/// one reference update for their sender) when the handler sends elsewhere,
/// when tuning::send_group_max wait, or when it returns. A handler that
/// sends one message, or each to another receiver, sends as before. Any
/// other enqueue on the thread enqueues the waiting chain first, so messages
/// keep the order in which they were sent.
struct send_group {
  actor_cell* dest;  // the chain's receiver (a reference is held), or nullptr
  actor_cell* prev;  // the receiver of the last send (compared only); `dest` if set
  message_node* first;
  message_node* last;
  std::uint32_t count;
  /// References to `owner` (the actor whose handler runs) that messages of
  /// the chain hold as their sender and that are not taken yet.
  std::uint32_t owed;
  actor_cell* owner;
};
extern thread_local constinit send_group tls_send_group;
/// Enqueues the waiting chain, if any.
[[gnu::noinline]] void flush_send_group() noexcept;
/// Starts a chain to `dest` with `n`, whose sender `owner` borrows
/// (enqueueing a chain that waits for another receiver first).
[[gnu::noinline]] void start_send_group(actor_cell* owner, actor_cell* dest, message_node* n) noexcept;
/// After each handler call (event and blocking actors): what waits is
/// enqueued, and the next handler starts without a previous receiver.
inline void send_group_after_handler() noexcept {
  auto& g = tls_send_group;
  if (g.dest != nullptr) [[unlikely]]
    flush_send_group();
  g.prev = nullptr;
}
}  // namespace detail

enum class priority : std::uint8_t { normal, urgent };

class actor_cell : public detail::resumable {
 public:
  static constexpr std::uint64_t ref_one = 1;
  static constexpr std::uint64_t mail_one = std::uint64_t{1} << 32;
  static constexpr std::uint64_t closed_bit = std::uint64_t{1} << 63;
  static constexpr std::uint64_t ref_mask = 0xffffffffULL;
  static constexpr std::uint64_t mail_mask = ~closed_bit & ~ref_mask;

  actor_cell(const actor_cell&) = delete;
  actor_cell& operator=(const actor_cell&) = delete;
  virtual ~actor_cell();

  static void* operator new(std::size_t size);
  static void operator delete(void* p, std::size_t size) noexcept;

  std::uint64_t id() const noexcept { return id_; }
  actor_system& system() const noexcept { return *sys_; }

  /// Messages queued and not yet consumed (a snapshot, readable by anyone).
  std::size_t mailbox_size() const noexcept {
    return static_cast<std::size_t>((word_.load(std::memory_order_relaxed) & mail_mask) >> 32);
  }
  /// true once the actor has ended (its mailbox is closed).
  bool terminated() const noexcept { return (word_.load(std::memory_order_acquire) & closed_bit) != 0; }

  /// Any thread. Takes ownership of `n`. Returns false when the actor had
  /// ended: the message is then a dead letter (counted; a request gets an
  /// actor_exited error back).
  bool enqueue(detail::message_node* n, priority p = priority::normal) noexcept;
  /// A message that arrived after the close (enqueue's cold path).
  [[gnu::noinline]] void bounce(detail::message_node* n) noexcept;
  /// enqueue() with a send group's chain waiting on this thread.
  [[gnu::noinline]] bool enqueue_after_group(detail::message_node* n, priority p) noexcept;
  /// Enqueues `count` normal messages linked first..last as one step; the
  /// caller holds a reference.
  void enqueue_chain(detail::message_node* first, detail::message_node* last, std::uint32_t count) noexcept;

  /// Like enqueue, but only if fewer than `limit` messages are queued; the
  /// check and the insertion are one atomic step. On false `n` is destroyed.
  [[nodiscard]] bool enqueue_if(detail::message_node* n, std::size_t limit) noexcept;

  // --- reference counting (see actor.hpp) ---
  void add_ref() noexcept { word_.fetch_add(ref_one, std::memory_order_relaxed); }
  void add_refs(std::uint32_t n) noexcept { word_.fetch_add(n * ref_one, std::memory_order_relaxed); }
  void release() noexcept { release_n(1); }
  void release_n(std::uint32_t n) noexcept;
  /// Adds a reference unless the actor has ended or is being freed.
  [[nodiscard]] bool try_add_ref() noexcept;

  // --- links and monitors (any thread) ---
  /// `watcher` receives a down_msg when this actor ends (at once if it has).
  void add_monitor(const actor& watcher);
  void remove_monitor(const actor& watcher);
  /// Both ends of a link are recorded; each end learns of the other's exit.
  static void link(actor_cell& a, actor_cell& b);
  static void unlink(actor_cell& a, actor_cell& b);

  /// Deliver `n` to `dest`, or count it as a dead letter if dest is empty.
  /// Inline: every send goes through it (ping_pong: one call less per message).
  static void deliver(const actor& dest, detail::message_node* n, priority p = priority::normal) noexcept {
    if (dest) [[likely]]
      dest->enqueue(n, p);
    else deliver_to_nobody(n);
  }
  /// deliver's cold path: no receiver at all (counted by the sender's system).
  [[gnu::noinline]] static void deliver_to_nobody(detail::message_node* n) noexcept;

  /// A handler of this actor returned troupe::skip (the message is marked):
  /// event actors get ready to keep it.
  virtual void note_skip() {}

  /// Handle to this actor (adds a reference).
  actor handle() noexcept { return actor{this, true}; }

 protected:
  explicit actor_cell(actor_system& sys);

  /// Called by the sender that found the mailbox empty: make the actor run.
  virtual void wake() noexcept = 0;
  /// Blocking actors start without the spawn token (nothing to initialise).
  void drop_spawn_token() noexcept { word_.fetch_sub(mail_one, std::memory_order_relaxed); }

  /// Called once when the actor ends, before links and monitors are told;
  /// frees behaviour, pending requests and other per-actor state.
  virtual void on_exit() noexcept {}

  /// Consumer only: next message, urgent first; nullptr if none visible.
  detail::message_node* pop() noexcept {
    if (auto* n = mpsc_pop(urgent_in_, urgent_out_)) return static_cast<detail::message_node*>(n);
    return static_cast<detail::message_node*>(mpsc_pop(normal_in_, normal_out_));
  }
  /// Consumer only: next urgent message (system messages, completions), or
  /// nullptr; normal messages stay queued.
  detail::message_node* pop_urgent() noexcept {
    return static_cast<detail::message_node*>(mpsc_pop(urgent_in_, urgent_out_));
  }

  /// Consumer only: `consumed` messages are done. Returns the number of
  /// messages still queued. If the result is 0 the actor is idle and must not
  /// touch itself again (another thread may already run it, or it was freed
  /// because no handle was left: then `freed` is set).
  std::size_t settle(std::size_t consumed, bool& freed) noexcept;

  /// Consumer only: ends the actor. `consumed` counts messages taken from the
  /// mailbox and not yet settled. Drains what is left (dead letters), tells
  /// links and monitors, leaves the system. May free the cell: do not touch
  /// `this` afterwards.
  void terminate(const error& reason, std::size_t consumed) noexcept;

  /// A message that cannot be delivered: counted, requests answered with an
  /// actor_exited error. Destroys the node.
  void dead_letter(detail::message_node* n, const error& why) noexcept;

  actor_system* sys_;

 private:
  friend class actor_system;
  friend void detail::release(actor_cell*) noexcept;
  struct extras;

  void last_release(std::uint64_t word) noexcept;
  /// terminate() once the mailbox is closed; `prev` is the word before.
  void finish_exit(const error& reason, std::uint64_t prev, std::size_t consumed) noexcept;
  void notify_exit(const error& reason) noexcept;
  extras& ensure_extras();

  // Producers' line: the count word and the queue heads.
  alignas(64) std::atomic<std::uint64_t> word_;
  mpsc_head urgent_in_;
  mpsc_head normal_in_;
  std::uint64_t id_;
  // The consumer's line: the queue tails, written on every message handled.
  alignas(64) mpsc_tail urgent_out_;
  mpsc_tail normal_out_;
  extras* extras_ = nullptr;  // links, monitors: rare, allocated on first use

 public:
  // Intrusive links of the system's list of live actors (see actor_system).
  actor_cell* live_prev_ = nullptr;
  actor_cell* live_next_ = nullptr;
  static constexpr std::uint32_t not_live = UINT32_MAX;
  std::uint32_t live_shard_ = not_live;
  /// Detached and blocking actors run on their own threads; the shutdown
  /// logic needs to know whether such an actor waits for mail.
  std::atomic<bool> waiting_{false};
  bool own_thread_ = false;

 private:
  bool exited_ = false;          // guarded by the cell's stripe lock
  errc exit_code_ = errc::none;  // idem; kept for late monitors and links
};

}  // namespace troupe
