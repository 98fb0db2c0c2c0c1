// remote_pipeline: pipeline3 (Source -> Forwarder -> Sink, the 24-byte
// tuples of common/stream_tuple.hpp) split across two processes over
// loopback TCP: the source in the client process (rank 0), the forwarder and
// the sink in a server process (rank 1), placement "0;1;1".
//
// params:
//   tuples    tuples the source emits (quick 5'000'000, full 20'000'000)
// Each implementation forks its server process first (common/peer_process.hpp),
// the server listens on an ephemeral port of 127.0.0.1 and reports it through
// the pipe; a handshake (outside the measured region) connects the client.
// Measured region: from the start of the client's part of the graph (its
// split(), which looks the server's inlet up and opens the channel) until the
// client has the sink's check result, i.e. until the sink has every tuple.
// Figure: tuples_per_s = tuples / wall_s.
// Check: the sink (in the server process) counts `tuples` tuples whose
// values sum to tuples*(tuples-1)/2, in order (stream_tuple::tally), and
// sends count, sum and out-of-order count back to the client, which checks
// them; the server process exits cleanly.
// How the check result comes back (troupe impls): the server publishes a
// "control" actor on the node its cluster listens with. After its part of
// the graph has ended, the server's main thread hands the tally to that
// actor; the client, once its own part has ended (everything it sent was
// acknowledged, i.e. taken by the forwarder: not yet at the sink), asks the
// control actor for the result with a request, which the actor answers
// through a response_promise as soon as it has the tally. The client's stop
// message then ends the server. No extra pipe protocol is needed, and the
// request's round trip (well under a millisecond) is part of the region.
// Deadlines: the troupe impls cancel their part of the graph 10 s before the
// run's time limit, so a stuck channel fails the run with the error of both
// processes rather than at the harness's timeout.
// Extra figures: rss_peak_client_mib, rss_peak_server_mib (VmHWM of each
// process at the end of the run; the server's comes back with the result).
// The table's user s / sys s / peak RSS come from the harness's wait4 on the
// client, which reaps the server: CPU of both processes, the larger peak RSS.
// Impls:
//   troupe        troupe::net::split of pipeline{source, forwarder, sink}
//                 over plaintext TCP (security::plaintext); channel sizes
//                 at their defaults (batch 1024, max_delay 1 ms, window
//                 65536); 1 worker per process, plus one thread per split
//                 replica, the node's I/O thread and ZeroMQ's
//   troupe_curve  the same with CURVE (a key pair per process, made before
//                 the fork; each node trusts the other's public key)
//   zmq           raw ZeroMQ PUSH -> PULL, the floor: the client packs the
//                 tuples into messages of 1024 (the channels' batch), the
//                 server unpacks them, passes each through a trivial forward
//                 step and tallies it like the sink, all on one thread, and
//                 acknowledges after the empty end marker over a second
//                 PUSH -> PULL pair; ZeroMQ's default high-water marks (1000
//                 messages per socket) are the only backpressure
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "common/harness.hpp"
#include "common/stream_tuple.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_troupe_curve(const params& p);
sample run_zmq(const params& p);

namespace remote_pipeline {

using stream_tuple::tally;
using stream_tuple::tuple;

/// Tuples per ZeroMQ message in the zmq impl (the channels' default batch).
constexpr std::size_t batch = 1024;

/// The run's time limit (peer::deadline_from_now): 60 s plus 5 us per
/// tuple, 85 s quick and 160 s full; main.cpp sets the harness timeout to
/// 300 s.
inline std::chrono::seconds time_limit(std::int64_t tuples) { return std::chrono::seconds{60 + tuples / 200'000}; }

/// A "VmXXX:" field of /proc/self/status in MiB (VmRSS: now, VmHWM: peak);
/// 0 when it cannot be read.
inline double proc_status_mib(const char* field) {
  double kib = 0;
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    const std::size_t n = std::strlen(field);
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::strncmp(line, field, n) == 0 && line[n] == ':') {
        kib = std::strtod(line + n + 1, nullptr);
        break;
      }
    }
    std::fclose(f);
  }
  return kib / 1024.0;
}

/// What the server sends back at the end.
struct result {
  std::int64_t count = 0;
  std::int64_t sum = 0;
  std::int64_t out_of_order = 0;
  double server_peak_mib = 0;
};

/// Checks the result against `tuples` and adds the memory figures.
inline void finish(sample& s, std::int64_t tuples, const result& r) {
  tally t;
  t.count = r.count;
  t.sum = r.sum;
  t.out_of_order = r.out_of_order;
  t.check(tuples);
  s.add("rss_peak_client_mib", proc_status_mib("VmHWM"), "MiB");
  s.add("rss_peak_server_mib", r.server_peak_mib, "MiB");
}

}  // namespace remote_pipeline
}  // namespace bench
