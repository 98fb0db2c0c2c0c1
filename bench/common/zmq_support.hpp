// Shared raw-ZeroMQ pieces of the zmq.cpp peers of the remote benchmarks
// (cppzmq over libzmq 4.3): sockets on 127.0.0.1 with an ephemeral port,
// sends and receives that give up at a deadline instead of blocking for ever,
// the two PUSH -> PULL pairs of a one-way stream with their hello handshake,
// and the receive loop for messages packed with whole items.
// Only include this from zmq.cpp files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "common/harness.hpp"
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

/// The two pairs of a one-way stream: the data goes from the client's PUSH
/// to the server's PULL, the answers from the server's PUSH back to the
/// client's PULL; one ZeroMQ I/O thread per process. Handshake (before the
/// measured region): the client sends a 1-byte hello on the data pair, the
/// server answers with an 8-byte 0 on the answer pair.

/// The server's end: binds both pairs on ephemeral ports, reports them (data
/// first), waits for the client's hello and answers it.
struct push_pull_server {
  push_pull_server(const peer::reporter& report, peer::clock::time_point deadline) {
    const int in_port = bind_loopback(in);
    const int ack_port = bind_loopback(ack);
    report.ports({in_port, ack_port});
    char hello = 0;
    bench::check(recv_by(in, &hello, sizeof hello, deadline, "server hello") == 1, "no 1-byte hello first");
    const std::int64_t ready = 0;
    send_by(ack, &ready, sizeof ready, deadline, "server hello");
  }

  zmq::context_t ctx{1};
  zmq::socket_t in = make_socket(ctx, zmq::socket_type::pull);   ///< the data
  zmq::socket_t ack = make_socket(ctx, zmq::socket_type::push);  ///< the answers
};

/// The client's end: connects to the two ports the server reported (data,
/// answers), says hello and waits for the answer.
struct push_pull_client {
  push_pull_client(const std::vector<int>& ports, peer::clock::time_point deadline) {
    bench::check(ports.size() == 2, "the server reported " + std::to_string(ports.size()) + " ports, expected 2");
    connect_loopback(out, ports[0]);
    connect_loopback(ack, ports[1]);
    const char hello = 'h';
    send_by(out, &hello, 1, deadline, "client hello");
    std::int64_t ready = -1;
    bench::check(recv_by(ack, &ready, sizeof ready, deadline, "client hello") == sizeof ready && ready == 0,
                 "wrong answer to the hello");
  }

  zmq::context_t ctx{1};
  zmq::socket_t out = make_socket(ctx, zmq::socket_type::push);  ///< the data
  zmq::socket_t ack = make_socket(ctx, zmq::socket_type::pull);  ///< the answers
};

/// Receives messages packed with whole T's into `buf` until the empty end
/// marker and passes the items of each to on_batch(std::span<const T>). A
/// message may hold buf.size() - 1 items: the one more makes a message too
/// long seen as such. Returns how many messages were skipped because they
/// were not whole T's or too long.
template <class T, class OnBatch>
std::int64_t recv_batches(zmq::socket_t& s, std::vector<T>& buf, peer::clock::time_point deadline, const char* what,
                          OnBatch&& on_batch) {
  const std::size_t buf_bytes = buf.size() * sizeof(T);
  const std::size_t max_bytes = (buf.size() - 1) * sizeof(T);
  std::int64_t malformed = 0;
  for (;;) {
    const auto n = recv_by(s, buf.data(), buf_bytes, deadline, what);
    if (n == 0) return malformed;
    if (n % sizeof(T) != 0 || n > max_bytes) {
      ++malformed;
      continue;
    }
    on_batch(std::span<const T>{buf.data(), n / sizeof(T)});
  }
}

}  // namespace bench::zmq_support
