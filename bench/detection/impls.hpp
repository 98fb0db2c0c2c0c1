// detection: how long troupe::net takes to notice that a peer process is
// gone, and whether it takes a live but starved peer for gone.
//
// Two processes, each with one troupe::net node (plaintext): a server
// process (forked first, common/peer_process.hpp) publishes "echo"; the
// client (the harness's child) looks it up and monitors it.
//
// Detection variants (fault kill, stop, cut): one round trip shows the
// session is up, then the connection stays idle (heartbeats only) for
// warmup_ms, 8 heartbeat intervals, so that the failure detector has learnt
// its gaps; then the fault: SIGKILL of the server process, SIGSTOP of it, or
// the veth link between the two network namespaces set down (`ip link set
// ... down` in the server's namespace; the processes stay as they are).
// Figure: detection_ms, from just before the fault to the client's down_msg
// for the monitored proxy (an event actor notes the time in its down
// handler); the run fails unless that down_msg's reason is
// net_errc::remote_unreachable or when none comes within heartbeat_timeout
// + 10 s.
//
// False-alarm variants (fault none, "hogs ..."): two CPU hog processes
// (busy loops, killed at the end, bounded by the run's time limit) compete
// with both nodes on the machine while the client sends requests to "echo",
// one at a time, 10 ms apart, for `seconds`; a request that fails makes the
// client look "echo" up again. Figure: false_unreachable, the peers found
// unreachable by both nodes' failure detectors (node_stats, the server's
// asked for at the end); it should be 0 at the default profile. Extras:
// client_unreachable, server_unreachable, sessions_lost (peers_lost of
// both), failed_requests, requests_per_s.
//
// The link: where the machine lets a root process make network namespaces
// (tests/net_namespaces.hpp), both processes run in their own namespace and
// talk over a veth pair; otherwise over loopback, and the cut variants are
// skipped (with the reason). Jitter, J = jitter_ms (10): `tc qdisc ...
// netem delay J J` on both ends of the veth pair where the kernel has
// sch_netem; where it has not (or there is no veth pair), the client dials
// a relay in its own process (tests/jitter_relay.hpp: a TCP relay on the
// client's loopback that holds every chunk it forwards J ms +- J ms, each
// way, keeping the bytes' order; started after the forks, as it has a
// thread) which connects to the server. The relay talks to the server over
// the veth pair, so a cut still cuts the client off; the session and the
// monitored proxy are the client's connection to the relay's address (the
// server's handshake names its own endpoint, which the client does not
// dial). The relay loses nothing (netem's loss has no counterpart over
// TCP) and runs on the loaded machine, like the nodes. Every run reports
// what it had as extras: veth (1 or 0), netem_jitter_ms (J, or 0) and
// relay_jitter_ms (J when the relay was used, else 0).
//
// params:
//   fault      0 kill, 1 stop, 2 cut, 3 none (the false-alarm variants)
//   lan        0: the default liveness profile, 1: node_config::lan()
//   warmup_ms  idle time before the fault (8 heartbeat intervals)
//   hogs       CPU hog processes (false-alarm variants: 2)
//   seconds    how long requests go on (false-alarm variants: 20, --full 60)
//   jitter_ms  jitter asked for, netem's or the relay's (10; 0: none)
#pragma once

#include <chrono>
#include <cstdint>

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);

namespace detection {

enum class fault : std::int64_t { kill = 0, stop = 1, cut = 2, none = 3 };

/// The run's time limit (peer::deadline_from_now): set-up, warm-up and
/// detection take under 25 s at the default profile; the false-alarm
/// variants add their `seconds`. main.cpp sets the harness timeout above it.
inline std::chrono::seconds time_limit(const params& p) { return std::chrono::seconds{60 + p.get_or("seconds", 0)}; }

}  // namespace detection
}  // namespace bench
