// The CAF 0.17 io side shared by the caf.cpp files of the remote_*
// benchmarks: the server process's publish-and-wait and the client's
// connect. Include only from caf.cpp files (after caf/io/all.hpp).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "common/peer_process.hpp"

namespace bench::caf_remote_support {

/// Publishes `server` on an ephemeral port of 127.0.0.1, reports the port and
/// waits until `server` has ended (the client's stop message) or the deadline
/// (then kills it and throws).
inline void publish_and_wait(caf::actor_system& sys, const caf::actor& server, const peer::reporter& report,
                             peer::clock::time_point deadline) {
  auto port = sys.middleman().publish(server, 0, "127.0.0.1");
  if (!port) {
    caf::anon_send_exit(server, caf::exit_reason::kill);
    throw std::runtime_error("publish failed: " + sys.render(port.error()));
  }
  report.ports({*port});
  caf::scoped_actor self{sys};
  self->monitor(server);
  bool down = false;
  self->receive([&](const caf::down_msg&) { down = true; }, caf::after(deadline - peer::clock::now()) >> [] {});
  if (!down) {
    self->send_exit(server, caf::exit_reason::kill);
    throw std::runtime_error("no stop message from the client by the deadline");
  }
}

/// The proxy of the actor published at 127.0.0.1:`port`; throws on failure.
inline caf::actor connect(caf::actor_system& sys, int port) {
  auto proxy = sys.middleman().remote_actor("127.0.0.1", static_cast<std::uint16_t>(port));
  if (!proxy) throw std::runtime_error("remote_actor failed: " + sys.render(proxy.error()));
  return *proxy;
}

}  // namespace bench::caf_remote_support
