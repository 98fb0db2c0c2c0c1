// layer: util
// tuning.hpp: troupe's tuning numbers, in one place, each with why it has
// the value it has. The user-facing ones are defaults of options a user can
// change (config, stream::options); the others are internal. Change one only
// with a measurement (docs/performance.md says how to take one).
#pragma once

#include <cstddef>
#include <cstdint>

namespace troupe::detail::tuning {

// ---- actor system (defaults of config fields)
/// Messages an actor handles per activation: long enough that a busy actor
/// keeps its cache warm, short enough that others on its worker wait
/// microseconds, not milliseconds (CAF's max-throughput plays this part).
inline constexpr std::size_t throughput = 100;
/// Queued messages above which a mailbox counts as overloaded (senders
/// yield after their current message): well above a burst, far below memory.
inline constexpr std::size_t mailbox_soft_limit = 1024;

// ---- scheduler
/// Search rounds before an idle worker parks (a round visits every victim
/// and pauses ~0.3-1 us): moderate polling up to ~50 us, relaxed ~5 us.
/// Moderate adapts between the two (scheduler.cpp).
inline constexpr std::uint32_t spin_rounds_moderate = 100;
inline constexpr std::uint32_t spin_rounds_relaxed = 10;
/// A worker that parks while another worker is awake sleeps at most this
/// long (us) before it looks again: filling a worker's next slot wakes
/// nobody, so an actor left there behind a long activation waits at most
/// about this long for a thief. 1000 wake-ups/s cost ~1% of a core.
inline constexpr std::uint32_t park_recheck_us = 1000;
/// An actor held back because it floods a receiver (a group publisher)
/// waits at most this long on its worker; then it runs whatever the
/// receiver's mailbox holds (two actors flooding each other, or a receiver
/// waiting for the held actor, must not wait forever).
inline constexpr std::uint32_t hold_max_us = 1000;
/// A parking worker checks its wake flag this many times with a pause, then
/// this many times with a yield, before it sleeps on the futex (libstdc++'s
/// atomic wait does 12 and 4): a wake-up that comes meanwhile costs no sleep.
inline constexpr int park_spins = 12;
inline constexpr int park_yields = 4;
/// A worker's FIFO ring of actors that yielded; overflow goes to the global
/// queue. 1024 x 8 bytes: thousands of runnable actors per worker before a lock.
inline constexpr std::uint64_t worker_ring = 1024;
/// A worker's Chase-Lev deque of forked tasks and woken actors.
inline constexpr std::int64_t worker_deque = 4096;
/// Senders whose message references a worker gives back in batches (fan-in
/// interleaves a few), and how many references at most before it does.
inline constexpr int release_slots = 4;
inline constexpr std::uint32_t release_batch = 1024;
/// Messages an actor's handler sends to one receiver that go out together
/// at most (see detail::send_group): more per chain means fewer count
/// updates on the receiver's line, a longer wait for the first of them.
inline constexpr std::uint32_t send_group_max = 64;
/// Activations between two flushes of those references (a worker also
/// flushes whenever it runs out of work): flushing after every activation
/// cost ping-pong 56 of its ~496 instructions per message.
inline constexpr std::uint32_t release_flush_every = 64;
/// Locks of the live-actor list (spawn and exit take one).
inline constexpr std::size_t live_shards = 16;

// ---- memory
/// Blocks a thread keeps per size class before it returns a batch (half of
/// this) to the shared depot: a producer/consumer pair recycles in place.
inline constexpr std::size_t pool_local_limit = 256;

// ---- stream graphs
/// Default slots per channel: 1024 x a 24-byte tuple is 24 KiB, inside L2,
/// and deep enough that a producer rarely waits on a consumer's hiccup.
inline constexpr std::size_t channel_capacity = 1024;
/// Default elements a runner handles per activation: long enough to spread
/// the per-batch fences and wake checks thin, short enough that runners
/// sharing a worker take turns within tens of microseconds.
inline constexpr std::size_t batch = 512;
/// Pushes a producer publishes at once (or capacity/4 if smaller): one index
/// store and one cache-line transfer per group instead of per element. The
/// producer's window (spsc_ring.hpp) ends at each group: 64 rather than 32
/// halves those ends (pipeline3: 72.0 -> 68.5 instructions per tuple, and
/// 1.02-1.16x the tuples per second in alternating runs).
inline constexpr std::size_t publish_group = 64;
/// Elements taken from one input channel before looking at the next, so
/// that no input starves the others within a batch.
inline constexpr std::size_t drain_chunk = 64;
/// Sinks time one stamped element in this many (a clock read each).
inline constexpr std::size_t latency_sample = 64;
/// A paced source pauses at least this long (ns): sources faster than one
/// element per pause send what has come due in bursts instead of polling
/// the clock through the scheduler.
inline constexpr std::uint64_t min_pause_ns = 50'000;
/// Times a blocked pooled runner re-polls through the scheduler (cheaper
/// than sleeping when room comes back fast) before it sleeps.
inline constexpr unsigned max_blocked_polls = 256;
/// How long an idle runner spins for input before it lets go: dedicated
/// threads up to linger_ns, pooled runners linger_spins rounds at most and
/// only while their worker has nothing else to run.
inline constexpr std::uint64_t linger_ns = 50'000;
inline constexpr unsigned linger_spins = 256;

/// At shutdown, how long stream graphs still running get to finish on their
/// own (their entries have closed) before they are cancelled.
inline constexpr std::uint64_t shutdown_drain_ms = 1000;

// ---- waiting
/// Spin steps (cpu pause) before a bounded busy wait starts to yield.
inline constexpr unsigned spins_before_yield = 64;

}  // namespace troupe::detail::tuning
