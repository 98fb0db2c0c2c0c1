// remote_pipeline, troupe::net: both processes build the same description,
// pipeline{source, forwarder, sink} (common/stream_nodes.hpp), and run their
// part of it with troupe::net::split and the placement "0;1;1": the client
// (rank 0) the source, the server (rank 1) the forwarder and the sink. The
// source's replica sends to the forwarder's inlet over the network; the
// forwarder sends to the sink's inlet in its own process. The sink's tally
// comes back through the server's published "control" actor (impls.hpp).
// troupe: plaintext TCP; troupe_curve: CURVE. Both processes: 1 worker. The
// set-up, the control actor and the waits are common/remote_stream_support.hpp.
#include "impls.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <troupe/net/split.hpp>

#include "common/peer_process.hpp"
#include "common/remote_stream_support.hpp"
#include "common/stream_nodes.hpp"
#include "common/troupe_net_support.hpp"

namespace {

namespace tn = bench::troupe_net_support;
namespace rs = bench::remote_stream;
namespace rp = bench::remote_pipeline;

/// The control actor answers with count, sum, out of order and the server's
/// peak RSS in MiB (rp::result).
void register_types() { rs::register_types<std::int64_t, std::int64_t, std::int64_t, double>(); }
void answer(troupe::response_promise& promise, const rp::result& r) {
  promise.deliver(r.count, r.sum, r.out_of_order, r.server_peak_mib);
}

/// The description every rank builds (the sink's tally pointer is only used
/// where the sink runs: the server).
auto description(std::int64_t tuples, rp::tally* t) {
  bench::stream_tuple::source src;
  src.n = tuples;
  bench::stream_tuple::sink snk;
  snk.t = t;
  return troupe::pipeline{src, bench::stream_tuple::forwarder{}, snk};
}

const std::vector<troupe::placement>& where() {
  static const auto p = troupe::net::stage_ranks("0;1;1");
  return p;
}

void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline, std::int64_t tuples,
           bool curve, const tn::keys& keys) {
  register_types();
  rs::process proc{rs::server_rank, curve, keys};
  rs::control_actor<rp::result> control{proc, answer};
  rp::tally t;
  rs::serve_part(proc, description(tuples, &t), where(), report, deadline);
  control.done(proc, rp::result{t.count, t.sum, t.out_of_order, rp::proc_status_mib("VmHWM")});
  control.wait_for_stop(deadline);
}

bench::sample run(const bench::params& p, bool curve) {
  using namespace bench;
  const auto tuples = p.get("tuples");
  const auto deadline = peer::deadline_from_now(remote_pipeline::time_limit(tuples));
  const tn::keys keys;
  peer::server_process server{
      [deadline, tuples, curve, &keys](const peer::reporter& report) { serve(report, deadline, tuples, curve, keys); }};
  const auto port = server.ports(deadline).at(0);

  register_types();
  rs::process proc{rs::client_rank, curve, keys, port};
  // The handshake: connects to the server (outside the measured region).
  auto control = tn::connect(proc.node, port, curve ? keys.server.public_key : std::string{}, "control");
  troupe::scoped_actor self{proc.sys};

  rp::result r;
  stopwatch sw;
  std::string failure = rs::run_client_part(proc, description(tuples, nullptr), where(), deadline);
  rs::request_result(self, control, failure, [&](std::int64_t count, std::int64_t sum, std::int64_t bad, double peak) {
    r = {count, sum, bad, peak};
  });
  sample s;
  s.wall_s = sw.seconds();
  rs::stop_and_join(self, control, server, deadline, failure);
  remote_pipeline::finish(s, tuples, r);
  return s;
}

}  // namespace

bench::sample bench::run_troupe(const params& p) { return run(p, false); }
bench::sample bench::run_troupe_curve(const params& p) { return run(p, true); }
