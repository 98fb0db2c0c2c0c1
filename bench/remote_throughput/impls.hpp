// remote_throughput: one-way 64-byte messages from one process to another
// over loopback TCP. The sender (the client) sends `messages` messages and
// then an end marker; the receiver (a server in a second process) counts the
// 64-byte messages and, at the end marker, sends one acknowledgement with its
// count back.
//
// params:
//   messages  64-byte messages sent (quick 1'000'000, full 10'000'000)
// Each implementation forks its server process first (common/peer_process.hpp),
// the server listens on an ephemeral port of 127.0.0.1, and a handshake
// (outside the measured region) sets the connection up in both directions.
// Measured region: from the first message sent until the sender has the
// acknowledgement. Figure: msgs_per_s = messages / wall_s.
// Check: the receiver counted exactly `messages` 64-byte messages (the count
// travels in the acknowledgement); the server process exits cleanly.
// The table's user s / sys s / peak RSS come from the harness's wait4 on the
// client, which reaps the server: CPU of both processes, the larger peak RSS.
// Impls: troupe (troupe::net, plain TCP), troupe_curve (troupe::net with its
// CURVE-encrypted transport), troupe_fields and troupe_raw (plain TCP, a
// 64-byte struct with padding and a bool, field by field or opted in to
// cross as its bytes: troupe.cpp), caf (CAF 0.17 io, publish / remote_actor, the
// sender bounded by windowed acknowledgements, see caf.cpp), zmq (raw
// ZeroMQ PUSH -> PULL, the acknowledgement over a second PUSH -> PULL pair).
#pragma once

#include <chrono>
#include <cstdint>

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_troupe_curve(const params& p);
sample run_troupe_fields(const params& p);
sample run_troupe_raw(const params& p);
sample run_caf(const params& p);
sample run_zmq(const params& p);

namespace remote_throughput {

/// Bytes of one message's payload.
constexpr std::size_t payload_bytes = 64;

/// The run's time limit (peer::deadline_from_now): 60 s plus 20 us per
/// message, 80 s quick and 260 s full (CAF sends about 170'000 msg/s on the
/// 2-core reference machine: 60 s full); main.cpp sets the harness timeout
/// to 300 s.
inline std::chrono::seconds time_limit(std::int64_t messages) { return std::chrono::seconds{60 + messages / 50'000}; }

}  // namespace remote_throughput
}  // namespace bench
