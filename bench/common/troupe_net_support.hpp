// Shared set-up of the troupe::net implementations of the remote_*
// benchmarks: the node configuration (plaintext or CURVE, with the key pairs
// made before the fork so both processes know both public keys) and the port
// of a bound endpoint.
#pragma once

#include <stdexcept>
#include <string>

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

}  // namespace bench::troupe_net_support
