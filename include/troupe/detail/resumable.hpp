// layer: runtime
// resumable.hpp: what the scheduler runs. An actor (or a pattern worker)
// becomes runnable, is queued once, and its resume() processes up to
// `throughput` units of work before handing the worker back.
#pragma once

#include <atomic>
#include <cstddef>

namespace troupe::detail {

enum class resume_result {
  done,   ///< idle or finished: the scheduler forgets it (it re-queues itself when needed)
  again,  ///< still has work: queue it again behind the others (fairness)
  /// still has work, but it floods a receiver: the worker keeps it aside and
  /// runs it again once held_back() turns false, or after
  /// tuning::hold_max_us at the latest (only from a scheduler worker;
  /// elsewhere `again`)
  held,
};

/// Per-thread deferred work of the layers above (batched reference count
/// releases): workers enable it for their thread, call flush_deferred()
/// every tuning::release_flush_every activations and whenever they run out
/// of work.
void defer_on_this_thread(bool on) noexcept;
void flush_deferred() noexcept;

/// true on a scheduler worker thread (of any actor_system).
bool on_worker_thread() noexcept;
/// On a worker: runs one piece of queued work (its own or stolen), true if it
/// did. Joins call it to help instead of blocking their worker.
bool help_one() noexcept;
/// On a worker: an activation that goes on past its first unit of work calls
/// this; an actor it woke into the worker's next slot (which wakes nobody
/// by itself) is then announced to the parked workers, since it may wait
/// there a while. Inline: one thread-local test when there is none (it is
/// called for every message after the first of an activation).
extern thread_local constinit bool next_unannounced;  // put_next filled the slot and woke nobody
void announce_next_slow() noexcept;
inline void announce_next() noexcept {
  if (next_unannounced) [[unlikely]]
    announce_next_slow();
}

/// Messages event actors handled on this thread and not yet added to a
/// counter (actor_system::messages_handled, metrics). An activation adds its
/// count here, one add to a thread-local (before: a load of the worker's
/// counter, a test and an add and a store through it, ping_pong: about 8
/// instructions per message). A pool worker moves it to its own counter every
/// tuning::release_flush_every activations and whenever it runs out of work;
/// the thread of a detached actor after each activation.
extern thread_local constinit std::uint64_t handled_unpublished;

class resumable {
 public:
  virtual resume_result resume(std::size_t throughput) = 0;
  /// After resume() returned `held`: whether it should still wait (read by
  /// the worker that holds it, while nothing else runs it).
  virtual bool held_back() const noexcept { return false; }

 protected:
  ~resumable() = default;
};

}  // namespace troupe::detail
