// layer: util
// tuning.hpp: troupe's tuning numbers, in one place, each with why it has
// the value it has. The user-facing ones are defaults of options a user can
// change (config, stream::options); the others are internal. Change one only
// with a measurement (docs/performance.md says how to take one).
#pragma once

#include <cstddef>
#include <cstdint>

namespace troupe::detail::tuning {

// ---- stream graphs
/// Default slots per channel: 1024 x a 24-byte tuple is 24 KiB, inside L2,
/// and deep enough that a producer rarely waits on a consumer's hiccup.
inline constexpr std::size_t channel_capacity = 1024;
/// Default elements a runner handles per activation: long enough to spread
/// the per-batch fences and wake checks thin, short enough that runners
/// sharing a worker take turns within tens of microseconds.
inline constexpr std::size_t batch = 512;
/// Pushes a producer publishes at once (or capacity/4 if smaller): one index
/// store and one cache-line transfer per group instead of per element.
inline constexpr std::size_t publish_group = 32;
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

// ---- waiting
/// Spin steps (cpu pause) before a bounded busy wait starts to yield.
inline constexpr unsigned spins_before_yield = 64;

}  // namespace troupe::detail::tuning
