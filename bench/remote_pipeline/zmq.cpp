// remote_pipeline, raw ZeroMQ (libzmq 4.3 via cppzmq), the floor: the
// client's PUSH socket connects to the server process's PULL socket and sends
// the tuples packed 1024 to a message (24 KiB; the last one shorter), then an
// empty end marker; it blocks at ZeroMQ's default high-water mark (1000
// messages per socket), the only backpressure. The server unpacks each
// message, passes every tuple through a trivial forward step and tallies it
// like the sink, on its one thread, and at the end marker answers over a
// second pair (the server's PUSH to the client's PULL) with a
// remote_pipeline::result as raw bytes. Handshake: a 1-byte hello, answered
// with an 8-byte 0. One ZeroMQ I/O thread per process.
#include "impls.hpp"

#include <string>
#include <vector>

#include "common/peer_process.hpp"
#include "common/zmq_support.hpp"

namespace {

namespace zs = bench::zmq_support;
namespace rp = bench::remote_pipeline;
using rp::tuple;

/// The forwarder's step (what stream_tuple::forwarder does: pass it on).
inline tuple forward(tuple x) { return x; }

/// The server process: forwards and tallies the tuples until the empty end
/// marker and acknowledges with the tally.
void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline) {
  zmq::context_t ctx{1};
  auto in = zs::make_socket(ctx, zmq::socket_type::pull);
  auto ack = zs::make_socket(ctx, zmq::socket_type::push);
  const int in_port = zs::bind_loopback(in);
  const int ack_port = zs::bind_loopback(ack);
  report.ports({in_port, ack_port});
  std::vector<tuple> buf(rp::batch + 1);  // one more: a message too long is seen as such
  const std::size_t buf_bytes = buf.size() * sizeof(tuple);
  bench::check(zs::recv_by(in, buf.data(), buf_bytes, deadline, "server hello") == 1, "no 1-byte hello first");
  const std::int64_t ready = 0;
  zs::send_by(ack, &ready, sizeof ready, deadline, "server hello");
  rp::tally t;
  std::int64_t malformed = 0;
  for (;;) {
    const auto n = zs::recv_by(in, buf.data(), buf_bytes, deadline, "server");
    if (n == 0) break;
    if (n % sizeof(tuple) != 0 || n > rp::batch * sizeof(tuple)) {
      ++malformed;
      continue;
    }
    for (std::size_t i = 0; i < n / sizeof(tuple); ++i) t.add(forward(buf[i]));
  }
  const rp::result r{t.count, t.sum, t.out_of_order, rp::proc_status_mib("VmHWM")};
  zs::send_by(ack, &r, sizeof r, deadline, "server ack");
  bench::check(malformed == 0, std::to_string(malformed) + " messages were not whole tuples");
}

}  // namespace

bench::sample bench::run_zmq(const params& p) {
  const auto tuples = p.get("tuples");
  const auto deadline = peer::deadline_from_now(remote_pipeline::time_limit(tuples));
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

  std::vector<tuple> batch(remote_pipeline::batch);
  remote_pipeline::result r;
  std::int64_t messages = 0;
  stopwatch sw;
  for (std::int64_t i = 0; i < tuples;) {
    std::size_t n = 0;
    for (; n < batch.size() && i < tuples; ++n, ++i) batch[n] = tuple{i % 1024, i, i};  // the source's tuples
    zs::send_by(out, batch.data(), n * sizeof(tuple), deadline, "client");
    if ((++messages & 0x3ff) == 0) peer::check_deadline(deadline, "client after " + std::to_string(i) + " tuples");
  }
  zs::send_by(out, nullptr, 0, deadline, "client end marker");
  const auto got = zs::recv_by(ack, &r, sizeof r, deadline, "client ack");
  sample s;
  s.wall_s = sw.seconds();

  server.join(deadline);
  check_eq("acknowledgement bytes", static_cast<std::int64_t>(sizeof r), static_cast<std::int64_t>(got));
  remote_pipeline::finish(s, tuples, r);
  return s;
}
