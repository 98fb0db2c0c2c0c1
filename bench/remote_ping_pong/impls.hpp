// remote_ping_pong: round trips between two processes over loopback TCP.
// A client sends a small message (an int64 sequence number) to a server in a
// second process, the server answers with the same number, and the client
// sends the next one only when it has the answer (one message in flight).
//
// params:
//   round_trips  client -> server -> client round trips (quick 20'000, full 200'000)
// Each implementation forks its server process first (common/peer_process.hpp),
// the server listens on an ephemeral port of 127.0.0.1, and one warm-up round
// trip (outside the measured region) sets the connection up.
// Measured region: from the first request sent to the last answer received by
// the client. Figures: round_trips_per_s = round_trips / wall_s; extra p50_us
// and p99_us, percentiles (nearest rank) of the single round trips' latencies
// (steady_clock read after every answer: the time since the previous one).
// Check: the client receives exactly round_trips answers, each carrying the
// number that was sent (1, 2, ..., round_trips); the server process exits
// cleanly after the client's stop message.
// The table's user s / sys s / peak RSS come from the harness's wait4 on the
// client, which reaps the server: CPU of both processes, the larger peak RSS.
// Impls: troupe (troupe::net, plain TCP), troupe_curve (troupe::net with its
// CURVE-encrypted transport), caf (CAF 0.17 io: publish / remote_actor, a
// scoped actor's requests), zmq (raw ZeroMQ REQ / REP, 8-byte messages).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_troupe_curve(const params& p);
sample run_caf(const params& p);
sample run_zmq(const params& p);

namespace remote_ping_pong {

/// The run's time limit (peer::deadline_from_now): 60 s plus 1 ms per round
/// trip, 80 s quick and 260 s full (CAF does about 4'000 rt/s on the 2-core
/// reference machine: 50 s full); main.cpp sets the harness timeout to 300 s.
inline std::chrono::seconds time_limit(std::int64_t round_trips) {
  return std::chrono::seconds{60 + round_trips / 1'000};
}

}  // namespace remote_ping_pong
}  // namespace bench
