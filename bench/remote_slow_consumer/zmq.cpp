// remote_slow_consumer, raw ZeroMQ (libzmq 4.3 via cppzmq), for comparison:
// the client's PUSH socket connects to the server process's PULL socket and
// sends the tuples packed 1024 to a message until `seconds` have passed, then
// an empty end marker; it blocks only at ZeroMQ's default high-water mark
// (1000 messages per socket). The server unpacks each message, tallies each
// tuple and busy-waits slow_ns for it, and at the end marker answers over a
// second pair (the server's PUSH to the client's PULL) with one message: an
// answer_head (raw bytes) followed by its every-second RSS samples. Handshake:
// a 1-byte hello, answered with an 8-byte 0. One ZeroMQ I/O thread per process.
#include "impls.hpp"

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "common/peer_process.hpp"
#include "common/zmq_support.hpp"

namespace {

namespace zs = bench::zmq_support;
namespace sc = bench::remote_slow_consumer;
using sc::clock;
using sc::tuple;

/// The start of the server's answer; `samples` doubles follow it.
struct answer_head {
  std::int64_t count = 0, sum = 0, out_of_order = 0, samples = 0;
  double at_end = 0;
};
/// Samples an answer has room for (an hour at one a second).
constexpr std::size_t max_samples = 3600;

void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline, std::int64_t slow_ns) {
  sc::rss_sampler sampler;
  std::vector<tuple> buf(sc::batch + 1);  // one more: a message too long is seen as such
  zs::push_pull_server link{report, deadline};
  sc::tally t;
  const auto malformed =
      zs::recv_batches(link.in, buf, deadline, "server", [&t, &sampler, slow_ns](std::span<const tuple> items) {
        if (t.count == 0) sampler.start(clock::now());
        for (const tuple& x : items) {
          t.add(x);
          sc::spin_for_ns(slow_ns);
        }
      });
  answer_head head{t.count, t.sum, t.out_of_order, 0, sc::rss_mib()};
  auto samples = sampler.stop();
  if (samples.size() > max_samples) samples.resize(max_samples);
  head.samples = static_cast<std::int64_t>(samples.size());
  std::vector<char> answer(sizeof head + samples.size() * sizeof(double));
  std::memcpy(answer.data(), &head, sizeof head);
  if (!samples.empty()) std::memcpy(answer.data() + sizeof head, samples.data(), samples.size() * sizeof(double));
  zs::send_by(link.ack, answer.data(), answer.size(), deadline, "server answer");
  bench::check(malformed == 0, std::to_string(malformed) + " messages were not whole tuples");
}

}  // namespace

bench::sample bench::run_zmq(const params& p) {
  const auto seconds = p.get("seconds");
  const auto slow_ns = p.get("slow_ns");
  const auto deadline = peer::deadline_from_now(remote_slow_consumer::time_limit(seconds));
  peer::server_process server{[deadline, slow_ns](const peer::reporter& report) { serve(report, deadline, slow_ns); }};
  const auto ports = server.ports(deadline);

  sc::rss_sampler sampler;
  zs::push_pull_client link{ports, deadline};

  std::vector<tuple> batch(sc::batch);
  std::vector<char> answer(sizeof(answer_head) + max_samples * sizeof(double));
  std::int64_t i = 0;
  stopwatch sw;
  const auto t0 = clock::now();
  sampler.start(t0);
  const auto end = t0 + std::chrono::seconds{seconds};
  while (clock::now() < end) {
    for (std::size_t n = 0; n < batch.size(); ++n, ++i) batch[n] = tuple{i % 1024, i, i};  // the source's tuples
    zs::send_by(link.out, batch.data(), batch.size() * sizeof(tuple), deadline, "client");
  }
  zs::send_by(link.out, nullptr, 0, deadline, "client end marker");
  const auto got = zs::recv_by(link.ack, answer.data(), answer.size(), deadline, "client answer");
  sc::series client;
  client.at_end = sc::rss_mib();
  client.every_second = sampler.stop();
  sample s;
  s.wall_s = sw.seconds();

  server.join(deadline);
  answer_head head;
  check(got >= sizeof head, "the answer is too short");
  std::memcpy(&head, answer.data(), sizeof head);
  check(head.samples >= 0 && static_cast<std::size_t>(head.samples) <= max_samples &&
            got == sizeof head + static_cast<std::size_t>(head.samples) * sizeof(double),
        "the answer's size does not match its sample count");
  sc::series server_side;
  server_side.at_end = head.at_end;
  server_side.every_second.resize(static_cast<std::size_t>(head.samples));
  if (head.samples > 0)
    std::memcpy(server_side.every_second.data(), answer.data() + sizeof head,
                server_side.every_second.size() * sizeof(double));
  sc::tally t;
  t.count = head.count;
  t.sum = head.sum;
  t.out_of_order = head.out_of_order;
  remote_slow_consumer::finish(s, i, t, client, server_side, "zmq");
  return s;
}
