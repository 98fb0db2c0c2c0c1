// Shared set-up of the troupe::net implementations of the remote_*
// benchmarks: the node configuration (plaintext or CURVE, with the key pairs
// made before the fork so both processes know both public keys) and the port
// of a bound endpoint.
#pragma once

#include <chrono>
#include <future>
#include <stdexcept>
#include <string>

#include "common/peer_process.hpp"

#include <troupe/net/node.hpp>

namespace bench::troupe_net_support {

struct keys {
  troupe::net::key_pair server = troupe::net::generate_key_pair();
  troupe::net::key_pair client = troupe::net::generate_key_pair();
};

inline troupe::net::node_config config(bool curve, const keys& k, bool server) {
  troupe::net::node_config c;
  c.name = server ? "bench-server" : "bench-client";
  if (!curve) {
    c.security = troupe::net::security::plaintext;
    return c;
  }
  c.keys = server ? k.server : k.client;
  c.trusted_keys = {server ? k.client.public_key : k.server.public_key};
  return c;
}

/// "tcp://127.0.0.1:41234" -> 41234.
inline int port_of(const std::string& endpoint) {
  auto colon = endpoint.rfind(':');
  if (colon == std::string::npos) throw std::runtime_error("no port in '" + endpoint + "'");
  return std::stoi(endpoint.substr(colon + 1));
}

/// The server process: listens on an ephemeral port of 127.0.0.1, reports
/// it and waits until `stopped` is set (the client's stop message) or the
/// deadline (throws).
inline void listen_and_wait(troupe::net::node& node, const peer::reporter& report, std::future<void> stopped,
                            peer::clock::time_point deadline) {
  report.ports({port_of(node.listen("tcp://127.0.0.1:*"))});
  if (stopped.wait_until(deadline) != std::future_status::ready)
    throw std::runtime_error("no stop message from the client by the deadline");
}

/// The client: the actor published as `name` by the server process at `port`.
inline troupe::actor connect(troupe::net::node& node, int port, const std::string& server_key,
                             const std::string& name) {
  return node.remote_actor({"tcp://127.0.0.1:" + std::to_string(port), server_key}, name, std::chrono::seconds{10});
}

}  // namespace bench::troupe_net_support
