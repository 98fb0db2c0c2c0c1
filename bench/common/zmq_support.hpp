// Shared raw-ZeroMQ pieces of the zmq.cpp peers of the remote benchmarks
// (cppzmq over libzmq 4.3): sockets on 127.0.0.1 with an ephemeral port, and
// sends and receives that give up at a deadline instead of blocking for ever.
// Only include this from zmq.cpp files.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include <zmq.hpp>

#include "common/peer_process.hpp"

namespace bench::zmq_support {

/// How long one blocking send or receive waits before it looks at the
/// deadline (it returns as soon as the message is there; this only bounds
/// how late a stuck run notices).
constexpr int slice_ms = 100;

/// How long closing a socket may wait for its unsent messages (a server's
/// last answer goes out while it shuts down; with 0 it could be dropped).
constexpr int linger_ms = 1000;

/// A socket that lingers at most linger_ms at close and whose sends and
/// receives time out after slice_ms.
inline zmq::socket_t make_socket(zmq::context_t& ctx, zmq::socket_type type) {
  zmq::socket_t s{ctx, type};
  s.set(zmq::sockopt::linger, linger_ms);
  s.set(zmq::sockopt::rcvtimeo, slice_ms);
  s.set(zmq::sockopt::sndtimeo, slice_ms);
  return s;
}

/// Binds `s` to an ephemeral port on 127.0.0.1 and returns the port.
inline int bind_loopback(zmq::socket_t& s) {
  s.bind("tcp://127.0.0.1:*");
  const std::string ep = s.get(zmq::sockopt::last_endpoint);  // "tcp://127.0.0.1:<port>"
  return std::stoi(ep.substr(ep.rfind(':') + 1));
}

inline void connect_loopback(zmq::socket_t& s, int port) { s.connect("tcp://127.0.0.1:" + std::to_string(port)); }

/// Sends one message of `size` bytes (blocks while the socket is at its
/// high-water mark); throws when it cannot be queued by `deadline`.
inline void send_by(zmq::socket_t& s, const void* data, std::size_t size, peer::clock::time_point deadline,
                    const char* what) {
  while (!s.send(zmq::const_buffer{data, size}, zmq::send_flags::none))
    peer::check_deadline(deadline, std::string{what} + ": send");
}

/// Receives one message into `buf` (at most `size` bytes are kept) and
/// returns its full size; throws when none arrives by `deadline`.
inline std::size_t recv_by(zmq::socket_t& s, void* buf, std::size_t size, peer::clock::time_point deadline,
                           const char* what) {
  for (;;) {
    if (auto r = s.recv(zmq::mutable_buffer{buf, size}, zmq::recv_flags::none)) return r->untruncated_size;
    peer::check_deadline(deadline, std::string{what} + ": receive");
  }
}

}  // namespace bench::zmq_support
