// Shared pieces of the troupe::net implementations of the remote stream
// benchmarks (remote_pipeline, remote_slow_consumer). In those, both
// processes build the same pipeline description and run their part of it
// with troupe::net::split: the client is rank 0, the server rank 1. The
// server publishes a "control" actor on its node: once the server's part has
// ended, its main thread hands the sink's result to the actor (done_atom); the
// client, once its own part has ended, asks for that result with a request
// (result_atom), which the actor answers through a response_promise as soon
// as it has the result; the client's stop_atom then ends the server.
//
// Here: the message types, each process's actor system, node and cluster
// (1 worker; plaintext or CURVE as common/troupe_net_support.hpp sets it
// up), waiting for a part with a deadline, the server's control actor, and
// the client's request for the result and its stop at the end.
// Only include this from troupe.cpp files.
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <troupe/net/split.hpp>
#include <troupe/troupe.hpp>

#include "common/peer_process.hpp"
#include "common/stream_tuple.hpp"
#include "common/troupe_net_support.hpp"

namespace bench::remote_stream {

struct result_atom {};  ///< client -> control: the result, once the server has it
struct done_atom {};    ///< the server's main thread -> control, with the result
struct stop_atom {};    ///< client -> control: the server may exit

/// Registers the stream's tuple, the atoms that cross the network and the
/// message `Answer...`: what the control actor answers result_atom with.
template <class... Answer>
void register_types() {
  troupe::net::add_type<stream_tuple::tuple>("bench.stream_tuple");
  troupe::net::add_type<result_atom>("result_atom");
  troupe::net::add_type<stop_atom>("stop_atom");
  troupe::net::add_message<result_atom>();
  troupe::net::add_message<stop_atom>();
  troupe::net::add_message<Answer...>();
}

constexpr std::size_t client_rank = 0;
constexpr std::size_t server_rank = 1;

/// Where a rank listens: 127.0.0.1 at `port` (0: "*", an ephemeral port the
/// rank's own cluster binds), with its public key (empty: plaintext).
inline troupe::net::remote_address loopback_address(int port, const std::string& public_key) {
  return {"tcp://127.0.0.1:" + (port == 0 ? std::string{"*"} : std::to_string(port)), public_key};
}

/// One process's side: an actor system with 1 worker, its node (plaintext,
/// or CURVE with `keys`: troupe_net_support::config) and its cluster, whose
/// peers are the client at an ephemeral port and the server at `server_port`
/// (0 on the server itself: it binds an ephemeral one; the client passes the
/// port the server reported).
struct process {
  process(std::size_t rank, bool curve, const troupe_net_support::keys& keys, int server_port = 0)
      : node{sys, troupe_net_support::config(curve, keys, rank == server_rank)},
        cl{sys, node,
           troupe::net::cluster_config{
               .rank = rank,
               .peers = {loopback_address(0, curve ? keys.client.public_key : std::string{}),
                         loopback_address(server_port, curve ? keys.server.public_key : std::string{})}}} {}

  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node;
  troupe::net::cluster cl;
};

/// The graphs of both processes are cancelled this long before the run's
/// deadline, so that the client can still collect the server's error.
constexpr std::chrono::seconds join_slack{10};

/// Waits for this process's part `g`, cancelling it at `deadline`: a stuck
/// channel (a sender waiting for credit that never comes) then ends the run
/// with an error instead of waiting for the harness's timeout.
inline void wait_by(const troupe::stream::graph& g, peer::clock::time_point deadline) {
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
    if (peer::clock::now() >= deadline) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string{"deadline passed (graph cancelled): "} + e.what());
      }
    }
    std::rethrow_exception(failure);
  }
}

/// The server: runs its part of `description` (split publishes its inlets),
/// reports the cluster's port and waits for the part, cancelled join_slack
/// before `deadline`. Throws when the channel fails: the client hears of it
/// through the pipe.
template <class Description>
void serve_part(process& p, const Description& description, const std::vector<troupe::placement>& where,
                const peer::reporter& report, peer::clock::time_point deadline) {
  auto graph = troupe::net::split(p.cl, description, where);
  report.ports({troupe_net_support::port_of(p.cl.self_address().endpoint)});
  wait_by(graph, deadline - join_slack);
}

/// The client: runs its part of `description` (split looks the server's
/// inlets up and opens the channels) and waits for it, cancelled join_slack
/// before `deadline`. Returns "" or "client part: <what went wrong>".
template <class Description>
std::string run_client_part(process& p, const Description& description, const std::vector<troupe::placement>& where,
                            peer::clock::time_point deadline) {
  try {
    auto graph = troupe::net::split(p.cl, description, where);
    wait_by(graph, deadline - join_slack);
  } catch (const std::exception& e) {
    return std::string{"client part: "} + e.what();
  }
  return {};
}

/// The server's control actor, published as "control" on its node: answers
/// result_atom with the Result that done() hands it (at once when it has it,
/// else as soon as it gets it), through answer(response_promise&, const
/// Result&), and makes wait_for_stop() return at the client's stop_atom.
template <class Result>
class control_actor {
 public:
  template <class Answer>
  control_actor(process& p, Answer answer) {
    actor_ = p.sys.spawn([this, answer](troupe::stateful_actor<state>& self) {
      return troupe::behavior{[&self, answer](result_atom) {
                                auto promise = self.make_response_promise();
                                auto& st = self.state();
                                if (st.result) answer(promise, *st.result);
                                else st.waiting.push_back(promise);
                                return promise;
                              },
                              [&self, answer](done_atom, Result& r) {
                                auto& st = self.state();
                                st.result = std::move(r);
                                for (auto& promise : st.waiting) answer(promise, *st.result);
                                st.waiting.clear();
                              },
                              [this](stop_atom) { stopped_.set_value(); }};
    });
    p.node.publish(actor_, "control");
  }
  control_actor(const control_actor&) = delete;
  control_actor& operator=(const control_actor&) = delete;

  /// From the server's main thread once its part has ended.
  void done(process& p, Result r) { p.sys.send(actor_, done_atom{}, std::move(r)); }

  /// Returns at the client's stop_atom; throws when none came by `deadline`.
  void wait_for_stop(peer::clock::time_point deadline) {
    if (stopped_.get_future().wait_until(deadline) != std::future_status::ready)
      throw std::runtime_error("no stop message from the client by the deadline");
  }

 private:
  struct state {
    std::optional<Result> result;
    std::vector<troupe::response_promise> waiting;
  };
  std::promise<void> stopped_;
  troupe::actor actor_;
};

/// The client: unless `failure` is set already, asks the server's control
/// actor for the result (60 s at most); `on_result` takes the answer, an
/// error sets `failure`.
template <class OnResult>
void request_result(troupe::scoped_actor& self, const troupe::actor& control, std::string& failure,
                    OnResult on_result) {
  if (!failure.empty()) return;
  self->request(control, std::chrono::seconds{60}, result_atom{})
      .receive(std::move(on_result), [&failure](troupe::error& e) { failure = "result request: " + e.to_string(); });
}

/// The client, after its measured region: tells the server to stop and
/// reaps it (server_process::join). When `failure` is set, throws it, with
/// the server's own failure appended if it had one.
inline void stop_and_join(troupe::scoped_actor& self, const troupe::actor& control, peer::server_process& server,
                          peer::clock::time_point deadline, const std::string& failure) {
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
}

}  // namespace bench::remote_stream
