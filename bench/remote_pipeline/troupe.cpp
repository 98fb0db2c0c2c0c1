// remote_pipeline, troupe::net: both processes build the same description,
// pipeline{source, forwarder, sink} (common/stream_nodes.hpp), and run their
// part of it with troupe::net::split and the placement "0;1;1": the client
// (rank 0) the source, the server (rank 1) the forwarder and the sink. The
// source's replica sends to the forwarder's inlet over the network; the
// forwarder sends to the sink's inlet in its own process. The sink's tally
// comes back through the server's published "control" actor (impls.hpp).
// troupe: plaintext TCP; troupe_curve: CURVE. Both processes: 1 worker.
#include "impls.hpp"

#include <chrono>
#include <exception>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <troupe/net/split.hpp>

#include "common/peer_process.hpp"
#include "common/stream_nodes.hpp"
#include "common/troupe_net_support.hpp"

namespace {

namespace tn = bench::troupe_net_support;
namespace rp = bench::remote_pipeline;
using rp::tuple;
struct result_atom {};
struct done_atom {};
struct stop_atom {};

void register_types() {
  troupe::net::add_type<tuple>("bench.stream_tuple");
  troupe::net::add_type<result_atom>("result_atom");
  troupe::net::add_type<stop_atom>("stop_atom");
  troupe::net::add_message<result_atom>();
  troupe::net::add_message<stop_atom>();
  troupe::net::add_message<std::int64_t, std::int64_t, std::int64_t, double>();
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

const troupe::net::placement& where() {
  static const auto p = troupe::net::placement::parse("0;1;1");
  return p;
}

/// Rank r's address as the other rank knows it (the server's port is
/// filled in by the client once the server reported it).
troupe::net::remote_address address(bool curve, const tn::keys& keys, bool server, int port = 0) {
  const std::string endpoint = "tcp://127.0.0.1:" + (port == 0 ? std::string{"*"} : std::to_string(port));
  return {endpoint, curve ? (server ? keys.server.public_key : keys.client.public_key) : std::string{}};
}

/// The graphs of both processes are cancelled this long before the run's
/// deadline, so that the client can still collect the server's error.
constexpr std::chrono::seconds join_slack{10};

/// Waits for this process's part `g`, cancelling it at `deadline`: a stuck
/// channel (a sender waiting for credit that never comes) then ends the run
/// with an error instead of waiting for the harness's timeout.
void wait_by(const troupe::net::split_graph& g, bench::peer::clock::time_point deadline) {
  std::promise<void> ended;
  auto ended_f = ended.get_future();
  std::thread watchdog{[&g, &ended_f, deadline] {
    if (ended_f.wait_until(deadline) == std::future_status::timeout) g.cancel();
  }};
  std::exception_ptr failure;
  try {
    g.wait();
  } catch (...) {
    failure = std::current_exception();
  }
  ended.set_value();
  watchdog.join();
  if (failure) {
    if (bench::peer::clock::now() >= deadline) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string{"deadline passed (graph cancelled): "} + e.what());
      }
    }
    std::rethrow_exception(failure);
  }
}

/// The server's control actor: answers result_atom requests with the sink's
/// tally once the server's part has ended (done_atom, from the server's main
/// thread), and sets `stopped` at the client's stop_atom.
struct control_state {
  std::optional<rp::result> result;
  std::vector<troupe::response_promise> waiting;
};

void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline, std::int64_t tuples,
           bool curve, const tn::keys& keys) {
  register_types();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node{sys, tn::config(curve, keys, true)};
  troupe::net::cluster cl{
      sys, node,
      troupe::net::cluster_config{.rank = 1, .peers = {address(curve, keys, false), address(curve, keys, true)}}};
  std::promise<void> stopped;
  auto control = sys.spawn([&stopped](troupe::stateful_actor<control_state>& self) {
    return troupe::behavior{[&self](result_atom) {
                              auto promise = self.make_response_promise();
                              auto& st = self.state();
                              if (st.result)
                                promise.deliver(st.result->count, st.result->sum, st.result->out_of_order,
                                                st.result->server_peak_mib);
                              else st.waiting.push_back(promise);
                              return promise;
                            },
                            [&self](done_atom, rp::result r) {
                              auto& st = self.state();
                              st.result = r;
                              for (auto& promise : st.waiting)
                                promise.deliver(r.count, r.sum, r.out_of_order, r.server_peak_mib);
                              st.waiting.clear();
                            },
                            [&stopped](stop_atom) { stopped.set_value(); }};
  });
  node.publish(control, "control");

  rp::tally t;
  auto graph = troupe::net::split(cl, description(tuples, &t), where());  // publishes the inlets
  report.ports({tn::port_of(cl.self_address().endpoint)});
  wait_by(graph, deadline - join_slack);  // throws when the channel fails: the client hears of it through the pipe
  sys.send(control, done_atom{}, rp::result{t.count, t.sum, t.out_of_order, rp::proc_status_mib("VmHWM")});
  if (stopped.get_future().wait_until(deadline) != std::future_status::ready)
    throw std::runtime_error("no stop message from the client by the deadline");
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
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node{sys, tn::config(curve, keys, false)};
  troupe::net::cluster cl{
      sys, node,
      troupe::net::cluster_config{.rank = 0, .peers = {address(curve, keys, false), address(curve, keys, true, port)}}};
  // The handshake: connects to the server (outside the measured region).
  auto control = tn::connect(node, port, curve ? keys.server.public_key : std::string{}, "control");
  troupe::scoped_actor self{sys};

  std::string failure;
  rp::result r;
  stopwatch sw;
  try {
    auto graph = troupe::net::split(cl, description(tuples, nullptr), where());
    wait_by(graph, deadline - join_slack);
  } catch (const std::exception& e) {
    failure = std::string{"client part: "} + e.what();
  }
  if (failure.empty())
    self->request(control, std::chrono::seconds{60}, result_atom{})
        .receive(
            [&](std::int64_t count, std::int64_t sum, std::int64_t bad, double peak) { r = {count, sum, bad, peak}; },
            [&](troupe::error& e) { failure = "result request: " + e.to_string(); });
  sample s;
  s.wall_s = sw.seconds();
  self->send(control, stop_atom{});
  if (!failure.empty()) {
    try {
      server.join(deadline);  // names the server's own failure, if it had one
    } catch (const std::exception& e) {
      throw std::runtime_error(failure + "; " + e.what());
    }
    throw std::runtime_error(failure);
  }
  server.join(deadline);
  remote_pipeline::finish(s, tuples, r);
  return s;
}

}  // namespace

bench::sample bench::run_troupe(const params& p) { return run(p, false); }
bench::sample bench::run_troupe_curve(const params& p) { return run(p, true); }
