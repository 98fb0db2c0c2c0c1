// client.hpp: what the NATS JetStream connectors share (the optional
// troupe::nats module, over Debian's libnats): where the servers are, how a
// message looks to a decoder, and the module's error.
//   troupe::nats::connection_config at{.servers = "nats://10.0.0.5:4222", .credentials = "app.creds"};
// The connectors themselves: source.hpp (a durable pull consumer, acknowledged
// when a checkpoint completes) and sink.hpp (publishes with message ids, so
// the server drops what a recovery sends again). See docs/connectors.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "troupe/util/exception.hpp"

namespace troupe::nats {

/// A NATS or JetStream call failed, or a message could not be decoded: the
/// message names the connector, the call and the server's answer (also a
/// troupe::exception with errc::runtime_error).
class nats_error : public std::runtime_error, public troupe::exception {
 public:
  explicit nats_error(const std::string& what) : std::runtime_error{what}, troupe::exception{errc::runtime_error} {}
};

/// How to reach the servers. Security is NATS's own: user and password, a
/// token, a credentials file (JWT and NKey seed), TLS with a CA.
struct connection_config {
  std::string servers = "nats://127.0.0.1:4222";  ///< one URL or several, comma-separated
  std::string user{};
  std::string password{};
  std::string token{};
  std::string credentials{};  ///< a .creds file ("" : none)
  std::string tls_ca{};       ///< a CA file: the connection uses TLS ("" : as the URL says)
  std::string tls_cert{};     ///< a client certificate and its key, for mutual TLS
  std::string tls_key{};
  /// Connecting, and each request to JetStream (stream and consumer info).
  std::chrono::milliseconds timeout{5000};
  /// How long the connectors go on through a lost server (libnats reconnects
  /// meanwhile) before the graph fails.
  std::chrono::milliseconds give_up_after{60000};
  std::string name = "troupe";  ///< the connection's name, as the server lists it
};

/// A message of a stream, as a source's decoder sees it (valid during the
/// call only).
struct message {
  std::string_view subject;
  std::string_view data;
  std::uint64_t sequence = 0;  ///< its sequence in the stream
  std::int64_t time_ns = 0;    ///< when the stream stored it (nanoseconds since the epoch)
};

}  // namespace troupe::nats
