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

#include <span>
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
  std::vector<tuple> buf(rp::batch + 1);  // one more: a message too long is seen as such
  zs::push_pull_server link{report, deadline};
  rp::tally t;
  const auto malformed = zs::recv_batches(link.in, buf, deadline, "server", [&t](std::span<const tuple> items) {
    for (const tuple& x : items) t.add(forward(x));
  });
  const rp::result r{t.count, t.sum, t.out_of_order, rp::proc_status_mib("VmHWM")};
  zs::send_by(link.ack, &r, sizeof r, deadline, "server ack");
  bench::check(malformed == 0, std::to_string(malformed) + " messages were not whole tuples");
}

}  // namespace

bench::sample bench::run_zmq(const params& p) {
  const auto tuples = p.get("tuples");
  const auto deadline = peer::deadline_from_now(remote_pipeline::time_limit(tuples));
  peer::server_process server{[deadline](const peer::reporter& report) { serve(report, deadline); }};
  zs::push_pull_client link{server.ports(deadline), deadline};

  std::vector<tuple> batch(remote_pipeline::batch);
  remote_pipeline::result r;
  std::int64_t messages = 0;
  stopwatch sw;
  for (std::int64_t i = 0; i < tuples;) {
    std::size_t n = 0;
    for (; n < batch.size() && i < tuples; ++n, ++i) batch[n] = tuple{i % 1024, i, i};  // the source's tuples
    zs::send_by(link.out, batch.data(), n * sizeof(tuple), deadline, "client");
    if ((++messages & 0x3ff) == 0) peer::check_deadline(deadline, "client after " + std::to_string(i) + " tuples");
  }
  zs::send_by(link.out, nullptr, 0, deadline, "client end marker");
  const auto got = zs::recv_by(link.ack, &r, sizeof r, deadline, "client ack");
  sample s;
  s.wall_s = sw.seconds();

  server.join(deadline);
  check_eq("acknowledgement bytes", static_cast<std::int64_t>(sizeof r), static_cast<std::int64_t>(got));
  remote_pipeline::finish(s, tuples, r);
  return s;
}
