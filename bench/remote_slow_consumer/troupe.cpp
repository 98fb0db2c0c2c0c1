// remote_slow_consumer, troupe::net: both processes build the same
// description, pipeline{timed source, slow sink}, and run their part of it
// with troupe::net::split and the placement "0;1": the client (rank 0) the
// source, the server (rank 1) the sink. The source emits until `seconds`
// have passed since the start, held back by the channel's credit whenever the
// sink's inlet has a window's worth queued. The sink's tally and the server's
// RSS samples come back through the server's published "control" actor: the
// client asks once its part has ended, the actor answers (response_promise)
// once the server's part has. Plaintext; both processes: 1 worker. The
// set-up, the control actor and the waits are common/remote_stream_support.hpp.
#include "impls.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <troupe/net/split.hpp>

#include "common/peer_process.hpp"
#include "common/remote_stream_support.hpp"
#include "common/troupe_net_support.hpp"

namespace {

namespace tn = bench::troupe_net_support;
namespace rs = bench::remote_stream;
namespace sc = bench::remote_slow_consumer;
using sc::clock;
using sc::tuple;

/// Emits the stream_tuple tuples (value i, key i % 1024) until `end`; the
/// count goes to *emitted when it stops (the client's copy of the node
/// runs in its split replica).
struct timed_source : troupe::stream::node<void, tuple> {
  static constexpr const char* kind = "source";
  clock::time_point end{};
  std::int64_t* emitted = nullptr;
  std::int64_t i = 0;
  bool produce() {
    if ((i & 1023) == 0 && clock::now() >= end) {
      *emitted = i;
      return false;
    }
    send_next(tuple{i % 1024, i, i});
    ++i;
    return true;
  }
};

/// Tallies each tuple and busy-waits slow_ns for it; starts the server's
/// sampler at the first one.
struct slow_sink : troupe::stream::node<tuple, void> {
  static constexpr const char* kind = "sink";
  sc::tally* t = nullptr;
  sc::rss_sampler* sampler = nullptr;
  std::int64_t slow_ns = 0;
  void consume(const tuple& x) {
    if (t->count == 0) sampler->start(clock::now());
    t->add(x);
    sc::spin_for_ns(slow_ns);
  }
};

/// The description every rank builds (each fills in the pointers of the
/// node it runs).
auto description(const timed_source& src, const slow_sink& snk) { return troupe::pipeline{src, snk}; }

const std::vector<troupe::placement>& where() {
  static const auto p = troupe::net::stage_ranks("0;1");
  return p;
}

/// What the server's control actor answers with.
struct result {
  std::int64_t count = 0, sum = 0, out_of_order = 0;
  sc::series server;
};
void register_types() { rs::register_types<std::int64_t, std::int64_t, std::int64_t, std::vector<double>, double>(); }
void answer(troupe::response_promise& promise, const result& r) {
  promise.deliver(r.count, r.sum, r.out_of_order, r.server.every_second, r.server.at_end);
}

void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline, std::int64_t slow_ns) {
  register_types();
  sc::rss_sampler sampler;  // outlives the graph, whose sink points to it
  rs::process proc{rs::server_rank, false, tn::keys{}};
  rs::control_actor<result> control{proc, answer};

  sc::tally t;
  slow_sink snk;
  snk.t = &t;
  snk.sampler = &sampler;
  snk.slow_ns = slow_ns;
  rs::serve_part(proc, description(timed_source{}, snk), where(), report, deadline);
  result r{t.count, t.sum, t.out_of_order, {}};
  r.server.at_end = sc::rss_mib();
  r.server.every_second = sampler.stop();
  control.done(proc, std::move(r));
  control.wait_for_stop(deadline);
}

}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto seconds = p.get("seconds");
  const auto slow_ns = p.get("slow_ns");
  const auto deadline = peer::deadline_from_now(remote_slow_consumer::time_limit(seconds));
  peer::server_process server{[deadline, slow_ns](const peer::reporter& report) { serve(report, deadline, slow_ns); }};
  const auto port = server.ports(deadline).at(0);

  register_types();
  sc::rss_sampler sampler;
  rs::process proc{rs::client_rank, false, tn::keys{}, port};
  // The handshake: connects to the server (outside the measured region).
  auto control = tn::connect(proc.node, port, std::string{}, "control");
  troupe::scoped_actor self{proc.sys};

  std::int64_t emitted = -1;
  sc::series client;
  result r;
  stopwatch sw;
  const auto t0 = clock::now();
  sampler.start(t0);
  timed_source src;
  src.end = t0 + std::chrono::seconds{seconds};
  src.emitted = &emitted;
  std::string failure = rs::run_client_part(proc, description(src, slow_sink{}), where(), deadline);
  client.at_end = sc::rss_mib();
  client.every_second = sampler.stop();
  rs::request_result(self, control, failure,
                     [&](std::int64_t count, std::int64_t sum, std::int64_t bad, std::vector<double>& every,
                         double at_end) { r = result{count, sum, bad, {std::move(every), at_end}}; });
  sample s;
  s.wall_s = sw.seconds();
  rs::stop_and_join(self, control, server, deadline, failure);
  sc::tally t;
  t.count = r.count;
  t.sum = r.sum;
  t.out_of_order = r.out_of_order;
  remote_slow_consumer::finish(s, emitted, t, client, r.server, "troupe");
  return s;
}
