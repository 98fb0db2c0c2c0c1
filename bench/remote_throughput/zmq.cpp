// remote_throughput, raw ZeroMQ (libzmq 4.3 via cppzmq): the client's PUSH
// socket connects to the server process's PULL socket and sends 64-byte
// messages (blocking at ZeroMQ's default high-water mark of 1000 messages);
// the acknowledgement comes back over a second pair, the server's PUSH to the
// client's PULL, as one 8-byte message (the count). Handshake: a 1-byte hello,
// answered with an 8-byte 0; the end marker is an empty message. One ZeroMQ
// I/O thread per process.
#include "impls.hpp"

#include <array>
#include <string>

#include "common/peer_process.hpp"
#include "common/zmq_support.hpp"

namespace {

namespace zs = bench::zmq_support;
using bench::remote_throughput::payload_bytes;

/// The server process: counts the 64-byte messages until the empty end
/// marker and acknowledges with the count.
void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline) {
  zmq::context_t ctx{1};
  auto in = zs::make_socket(ctx, zmq::socket_type::pull);
  auto ack = zs::make_socket(ctx, zmq::socket_type::push);
  const int in_port = zs::bind_loopback(in);
  const int ack_port = zs::bind_loopback(ack);
  report.ports({in_port, ack_port});
  std::array<char, payload_bytes + 1> buf{};
  bench::check(zs::recv_by(in, buf.data(), buf.size(), deadline, "server hello") == 1, "no 1-byte hello first");
  const std::int64_t ready = 0;
  zs::send_by(ack, &ready, sizeof ready, deadline, "server hello");
  std::int64_t counted = 0;
  std::int64_t other = 0;
  for (;;) {
    auto n = zs::recv_by(in, buf.data(), buf.size(), deadline, "server");
    if (n == payload_bytes) ++counted;
    else if (n == 0) break;
    else ++other;
  }
  zs::send_by(ack, &counted, sizeof counted, deadline, "server ack");
  bench::check(other == 0, std::to_string(other) + " messages were not " + std::to_string(payload_bytes) + " bytes");
}

}  // namespace

bench::sample bench::run_zmq(const params& p) {
  const auto messages = p.get("messages");
  const auto deadline = peer::deadline_from_now(remote_throughput::time_limit(messages));
  peer::server_process server{[deadline](const peer::reporter& report) { serve(report, deadline); }};
  const auto ports = server.ports(deadline);
  check(ports.size() == 2, "the server reported " + std::to_string(ports.size()) + " ports, expected 2");

  zmq::context_t ctx{1};
  auto out = zs::make_socket(ctx, zmq::socket_type::push);
  auto ack = zs::make_socket(ctx, zmq::socket_type::pull);
  zs::connect_loopback(out, ports[0]);
  zs::connect_loopback(ack, ports[1]);
  const char hello = 'h';
  zs::send_by(out, &hello, 1, deadline, "client hello");
  std::int64_t ready = -1;
  check(zs::recv_by(ack, &ready, sizeof ready, deadline, "client hello") == sizeof ready && ready == 0,
        "wrong answer to the hello");

  std::array<char, payload_bytes> payload;
  payload.fill('x');
  std::int64_t counted = -1;
  stopwatch sw;
  for (std::int64_t i = 0; i < messages; ++i) {
    zs::send_by(out, payload.data(), payload.size(), deadline, "client");
    if ((i & 0xffff) == 0) peer::check_deadline(deadline, "client after " + std::to_string(i) + " messages");
  }
  zs::send_by(out, nullptr, 0, deadline, "client end marker");
  auto n = zs::recv_by(ack, &counted, sizeof counted, deadline, "client ack");
  sample s;
  s.wall_s = sw.seconds();

  server.join(deadline);
  check_eq("acknowledgement bytes", static_cast<std::int64_t>(sizeof counted), static_cast<std::int64_t>(n));
  check_eq("messages counted by the receiver", messages, counted);
  return s;
}
