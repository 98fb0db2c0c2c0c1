// remote_ping_pong, CAF 0.17 io: the server process publishes an
// event-based echo actor (middleman().publish on port 0: CAF binds an
// ephemeral port and returns it) that sends every int64 (a built-in type:
// nothing to announce) back to its sender; the client gets a proxy with
// middleman().remote_actor and a scoped (blocking) actor sends one number at
// a time and receives the answer (receive with after(10 s)).
// Plain messages, not request(...).receive: every request schedules its
// timeout in the actor clock, and in a blocking actor the expired timeouts
// pile up unread in the mailbox, which each later receive scans (a full run
// slowed from ~4'000 to ~600 rt/s before it hit its time limit).
// Both processes: CAF's scheduler with 1 worker, plus the middleman's own
// I/O thread.
#include "impls.hpp"

#include <chrono>
#include <string>
#include <vector>

#include <caf/io/all.hpp>

#include "common/caf_remote_support.hpp"
#include "common/caf_support.hpp"
#include "common/peer_process.hpp"

namespace {

using stop_atom = caf::atom_constant<caf::atom("stop")>;

/// Longest wait for one answer (the run's deadline bounds the whole loop).
constexpr std::chrono::seconds answer_timeout{10};

/// caf_support::config with 1 worker and the io module (the middleman).
struct remote_config : bench::caf_support::config {
  remote_config() : config{1} { load<caf::io::middleman>(); }
};

caf::behavior echo(caf::event_based_actor* self) {
  return {
      [=](std::int64_t seq) { self->send(caf::actor_cast<caf::actor>(self->current_sender()), seq); },
      [=](stop_atom) { self->quit(); },
  };
}

/// The server process: publishes the echo actor, reports its port and waits
/// until the actor has quit (the client's stop message) or the deadline.
void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  auto server = sys.spawn(echo);
  bench::caf_remote_support::publish_and_wait(sys, server, report, deadline);
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto round_trips = p.get("round_trips");
  const auto deadline = peer::deadline_from_now(remote_ping_pong::time_limit(round_trips));
  peer::server_process server{[deadline](const peer::reporter& report) { serve(report, deadline); }};
  const auto port = server.ports(deadline).at(0);

  remote_config cfg;
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, 1);
  const caf::actor remote = caf_remote_support::connect(sys, port);
  caf::scoped_actor self{sys};

  std::string failure;
  std::int64_t bad_seq = 0;
  std::int64_t received = 0;
  auto round_trip = [&](std::int64_t seq) {
    self->send(remote, seq);
    self->receive(
        [&](std::int64_t back) {
          if (back != seq && bad_seq == 0) bad_seq = seq;
        },
        caf::after(answer_timeout) >> [&] { failure = "no answer to " + std::to_string(seq) + " within 10 s"; });
  };
  round_trip(0);  // warm-up: both directions of the connection are up
  check(failure.empty(), failure);

  std::vector<std::int64_t> latency_ns(static_cast<std::size_t>(round_trips));
  stopwatch sw;
  auto t_prev = peer::clock::now();
  for (std::int64_t seq = 1; seq <= round_trips && failure.empty(); ++seq) {
    round_trip(seq);
    const auto t = peer::clock::now();
    latency_ns[static_cast<std::size_t>(seq - 1)] =
        std::chrono::duration_cast<std::chrono::nanoseconds>(t - t_prev).count();
    t_prev = t;
    if (failure.empty()) ++received;
    if (t >= deadline) failure = "deadline passed after " + std::to_string(seq) + " round trips";
  }
  sample s;
  s.wall_s = sw.seconds();

  check(failure.empty(), failure);  // (the server process is killed on the way out)
  self->send(remote, stop_atom::value);
  server.join(deadline);
  check(bad_seq == 0, "answer out of order at seq " + std::to_string(bad_seq));
  check_eq("answers received", round_trips, received);
  add_latency_percentiles(s, latency_ns);
  return s;
}
