// remote_ping_pong, raw ZeroMQ (libzmq 4.3 via cppzmq): the client's REQ
// socket connects to the server process's REP socket (bound to an ephemeral
// port); every request and answer is one 8-byte message (the int64). An
// empty request is the stop message (answered with an empty message, then the
// server exits). One ZeroMQ I/O thread per process.
#include "impls.hpp"

#include <chrono>
#include <string>
#include <vector>

#include "common/peer_process.hpp"
#include "common/zmq_support.hpp"

namespace {

namespace zs = bench::zmq_support;

/// The server process: answers every 8-byte request with the same 8 bytes
/// until the empty stop request.
void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline) {
  zmq::context_t ctx{1};
  auto rep = zs::make_socket(ctx, zmq::socket_type::rep);
  report.ports({zs::bind_loopback(rep)});
  std::int64_t bad_size = 0;
  for (;;) {
    std::int64_t seq = 0;
    auto n = zs::recv_by(rep, &seq, sizeof seq, deadline, "server");
    if (n == 0) {
      zs::send_by(rep, nullptr, 0, deadline, "server");
      break;
    }
    if (n != sizeof seq) ++bad_size;
    zs::send_by(rep, &seq, sizeof seq, deadline, "server");
  }
  bench::check(bad_size == 0, std::to_string(bad_size) + " requests were not 8 bytes long");
}

}  // namespace

bench::sample bench::run_zmq(const params& p) {
  const auto round_trips = p.get("round_trips");
  const auto deadline = peer::deadline_from_now(remote_ping_pong::time_limit(round_trips));
  peer::server_process server{[deadline](const peer::reporter& report) { serve(report, deadline); }};
  const auto port = server.ports(deadline).at(0);

  zmq::context_t ctx{1};
  auto req = zs::make_socket(ctx, zmq::socket_type::req);
  zs::connect_loopback(req, port);

  std::int64_t bad_seq = 0;
  std::int64_t received = 0;
  auto round_trip = [&](std::int64_t seq) {
    zs::send_by(req, &seq, sizeof seq, deadline, "client");
    std::int64_t back = -1;
    auto n = zs::recv_by(req, &back, sizeof back, deadline, "client");
    if ((n != sizeof back || back != seq) && bad_seq == 0) bad_seq = seq;
  };
  round_trip(0);  // warm-up: the connection is up
  check(bad_seq == 0, "warm-up answer wrong");

  std::vector<std::int64_t> latency_ns(static_cast<std::size_t>(round_trips));
  stopwatch sw;
  auto t_prev = peer::clock::now();
  for (std::int64_t seq = 1; seq <= round_trips; ++seq) {
    round_trip(seq);
    const auto t = peer::clock::now();
    latency_ns[static_cast<std::size_t>(seq - 1)] =
        std::chrono::duration_cast<std::chrono::nanoseconds>(t - t_prev).count();
    t_prev = t;
    ++received;
    check(t < deadline, "deadline passed after " + std::to_string(seq) + " round trips");
  }
  sample s;
  s.wall_s = sw.seconds();

  zs::send_by(req, nullptr, 0, deadline, "client stop");
  char ignored;
  zs::recv_by(req, &ignored, sizeof ignored, deadline, "client stop");
  server.join(deadline);
  check(bad_seq == 0, "answer out of order at seq " + std::to_string(bad_seq));
  check_eq("answers received", round_trips, received);
  add_latency_percentiles(s, latency_ns);
  return s;
}
