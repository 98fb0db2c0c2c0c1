// remote_slow_consumer, troupe::net: both processes build the same
// description, pipeline{timed source, slow sink}, and run their part of it
// with troupe::net::split and the placement "0;1": the client (rank 0) the
// source, the server (rank 1) the sink. The source emits until `seconds`
// have passed since the start, held back by the channel's credit whenever the
// sink's inlet has a window's worth queued. The sink's tally and the server's
// RSS samples come back through the server's published "control" actor: the
// client asks once its part has ended, the actor answers (response_promise)
// once the server's part has. Plaintext; both processes: 1 worker.
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
#include "common/troupe_net_support.hpp"

namespace {

namespace tn = bench::troupe_net_support;
namespace sc = bench::remote_slow_consumer;
using sc::clock;
using sc::tuple;
struct result_atom {};
struct done_atom {};
struct stop_atom {};

void register_types() {
  troupe::net::add_type<tuple>("bench.stream_tuple");
  troupe::net::add_type<result_atom>("result_atom");
  troupe::net::add_type<stop_atom>("stop_atom");
  troupe::net::add_message<result_atom>();
  troupe::net::add_message<stop_atom>();
  troupe::net::add_message<std::int64_t, std::int64_t, std::int64_t, std::vector<double>, double>();
}

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

const troupe::net::placement& where() {
  static const auto p = troupe::net::placement::parse("0;1");
  return p;
}

troupe::net::remote_address address(int port = 0) {
  return {"tcp://127.0.0.1:" + (port == 0 ? std::string{"*"} : std::to_string(port)), std::string{}};
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

/// What the server's control actor answers with.
struct result {
  std::int64_t count = 0, sum = 0, out_of_order = 0;
  sc::series server;
};
struct control_state {
  std::optional<result> r;
  std::vector<troupe::response_promise> waiting;
};
void answer(troupe::response_promise& promise, const result& r) {
  promise.deliver(r.count, r.sum, r.out_of_order, r.server.every_second, r.server.at_end);
}

void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline, std::int64_t slow_ns) {
  register_types();
  sc::rss_sampler sampler;  // outlives the graph, whose sink points to it
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node{sys, tn::config(false, tn::keys{}, true)};
  troupe::net::cluster cl{sys, node, troupe::net::cluster_config{.rank = 1, .peers = {address(), address()}}};
  std::promise<void> stopped;
  auto control = sys.spawn([&stopped](troupe::stateful_actor<control_state>& self) {
    return troupe::behavior{[&self](result_atom) {
                              auto promise = self.make_response_promise();
                              auto& st = self.state();
                              if (st.r) answer(promise, *st.r);
                              else st.waiting.push_back(promise);
                              return promise;
                            },
                            [&self](done_atom, result& r) {
                              auto& st = self.state();
                              st.r = std::move(r);
                              for (auto& promise : st.waiting) answer(promise, *st.r);
                              st.waiting.clear();
                            },
                            [&stopped](stop_atom) { stopped.set_value(); }};
  });
  node.publish(control, "control");

  sc::tally t;
  slow_sink snk;
  snk.t = &t;
  snk.sampler = &sampler;
  snk.slow_ns = slow_ns;
  auto graph = troupe::net::split(cl, description(timed_source{}, snk), where());  // publishes the inlet
  report.ports({tn::port_of(cl.self_address().endpoint)});
  wait_by(graph, deadline - join_slack);  // throws when the channel fails: the client hears of it through the pipe
  result r{t.count, t.sum, t.out_of_order, {}};
  r.server.at_end = sc::rss_mib();
  r.server.every_second = sampler.stop();
  sys.send(control, done_atom{}, std::move(r));
  if (stopped.get_future().wait_until(deadline) != std::future_status::ready)
    throw std::runtime_error("no stop message from the client by the deadline");
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
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node{sys, tn::config(false, tn::keys{}, false)};
  troupe::net::cluster cl{sys, node, troupe::net::cluster_config{.rank = 0, .peers = {address(), address(port)}}};
  // The handshake: connects to the server (outside the measured region).
  auto control = tn::connect(node, port, std::string{}, "control");
  troupe::scoped_actor self{sys};

  std::string failure;
  std::int64_t emitted = -1;
  sc::series client;
  result r;
  stopwatch sw;
  const auto t0 = clock::now();
  sampler.start(t0);
  try {
    timed_source src;
    src.end = t0 + std::chrono::seconds{seconds};
    src.emitted = &emitted;
    auto graph = troupe::net::split(cl, description(src, slow_sink{}), where());
    wait_by(graph, deadline - join_slack);
  } catch (const std::exception& e) {
    failure = std::string{"client part: "} + e.what();
  }
  client.at_end = sc::rss_mib();
  client.every_second = sampler.stop();
  if (failure.empty())
    self->request(control, std::chrono::seconds{60}, result_atom{})
        .receive([&](std::int64_t count, std::int64_t sum, std::int64_t bad, std::vector<double>& every,
                     double at_end) { r = result{count, sum, bad, {std::move(every), at_end}}; },
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
  sc::tally t;
  t.count = r.count;
  t.sum = r.sum;
  t.out_of_order = r.out_of_order;
  remote_slow_consumer::finish(s, emitted, t, client, r.server, "troupe");
  return s;
}
