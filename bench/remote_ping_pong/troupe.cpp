// remote_ping_pong, troupe::net: the server process publishes an event actor
// that answers every int64 with the same int64 (a plain message back to its
// sender); the client's scoped (blocking) actor sends one and receives the
// answer before it sends the next. troupe: plaintext TCP; troupe_curve: the
// same over CURVE (keys made before the fork). Both processes: 1 worker,
// plus the node's I/O thread and ZeroMQ's.
#include "impls.hpp"

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "common/peer_process.hpp"
#include "common/troupe_net_support.hpp"

namespace {

namespace tn = bench::troupe_net_support;
struct stop_atom {};

void register_types() {
  troupe::net::add_type<stop_atom>("stop_atom");
  troupe::net::add_message<std::int64_t>();
  troupe::net::add_message<stop_atom>();
}

void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline, bool curve,
           const tn::keys& keys) {
  register_types();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node{sys, tn::config(curve, keys, true)};
  std::promise<void> stopped;
  node.publish(sys.spawn([&stopped](troupe::event_actor&) {
    return troupe::behavior{[](std::int64_t v) { return v; }, [&stopped](stop_atom) { stopped.set_value(); }};
  }),
               "ponger");
  tn::listen_and_wait(node, report, stopped.get_future(), deadline);
}

bench::sample run(const bench::params& p, bool curve) {
  using namespace bench;
  const auto round_trips = p.get("round_trips");
  const auto deadline = peer::deadline_from_now(remote_ping_pong::time_limit(round_trips));
  const tn::keys keys;
  peer::server_process server{
      [deadline, curve, &keys](const peer::reporter& report) { serve(report, deadline, curve, keys); }};
  const auto port = server.ports(deadline).at(0);

  register_types();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node{sys, tn::config(curve, keys, false)};
  auto ponger = tn::connect(node, port, keys.server.public_key, "ponger");
  troupe::scoped_actor self{sys};
  std::int64_t bad_seq = 0;
  std::string failure;
  auto round_trip = [&](std::int64_t seq) {
    self->send(ponger, seq);
    bool got = self->receive_for(std::chrono::seconds{10}, [&](std::int64_t back) {
      if (back != seq && bad_seq == 0) bad_seq = seq;
    });
    if (!got && failure.empty()) failure = "no answer within 10 s to " + std::to_string(seq);
  };
  round_trip(0);  // warm-up: the connection is up
  check(failure.empty() && bad_seq == 0, "warm-up failed: " + failure);

  std::vector<std::int64_t> latency_ns(static_cast<std::size_t>(round_trips));
  stopwatch sw;
  auto t_prev = peer::clock::now();
  std::int64_t received = 0;
  for (std::int64_t seq = 1; seq <= round_trips && failure.empty(); ++seq) {
    round_trip(seq);
    const auto t = peer::clock::now();
    latency_ns[static_cast<std::size_t>(seq - 1)] =
        std::chrono::duration_cast<std::chrono::nanoseconds>(t - t_prev).count();
    t_prev = t;
    ++received;
    if (t >= deadline) failure = "deadline passed after " + std::to_string(seq) + " round trips";
  }
  sample s;
  s.wall_s = sw.seconds();
  check(failure.empty(), failure);
  self->send(ponger, stop_atom{});
  server.join(deadline);
  check(bad_seq == 0, "answer out of order at seq " + std::to_string(bad_seq));
  check_eq("answers received", round_trips, received);
  add_latency_percentiles(s, latency_ns);
  return s;
}

}  // namespace

bench::sample bench::run_troupe(const params& p) { return run(p, false); }
bench::sample bench::run_troupe_curve(const params& p) { return run(p, true); }
