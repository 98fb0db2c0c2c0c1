// The node's life (start, close, the actor system's shutdown) and the public
// API of troupe::net::node; the work itself is split by concern (see
// node_core.hpp: wire format, transport, sessions, actors).
#include "troupe/net/node.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "node_core.hpp"

namespace troupe::net {
namespace detail {

node_core::node_core(actor_system& sys, node_config cfg) : sys_{sys}, cfg_{std::move(cfg)} {
  std::random_device rd;
  inc_ = (std::uint64_t{rd()} << 32 | rd()) | 1;
  if (cfg_.security == security::curve) {
    if (!is_z85_key(cfg_.keys.public_key) || !is_z85_key(cfg_.keys.secret_key))
      throw net_error(
          "troupe::net: node_config.keys is not a CURVE key pair (two Z85 keys of 40 characters; "
          "make one with generate_key_pair() or troupe-keygen), or set security::plaintext");
    for (std::size_t i = 0; i < cfg_.trusted_keys.size(); ++i)
      if (!is_z85_key(cfg_.trusted_keys[i]))
        throw net_error("troupe::net: node_config.trusted_keys[" + std::to_string(i) +
                        "] is not a Z85 CURVE public key (40 characters)");
    trusted_.insert(cfg_.trusted_keys.begin(), cfg_.trusted_keys.end());
  } else {
    log("runs WITHOUT encryption or authentication (security::plaintext)");
  }
  if (cfg_.heartbeat_interval.count() <= 0 || cfg_.heartbeat_timeout <= cfg_.heartbeat_interval)
    throw net_error("troupe::net: node_config needs 0 < heartbeat_interval < heartbeat_timeout (got " +
                    std::to_string(cfg_.heartbeat_interval.count()) + " ms and " +
                    std::to_string(cfg_.heartbeat_timeout.count()) + " ms)");
  if (!(cfg_.phi_threshold > 0) || !std::isfinite(cfg_.phi_threshold))
    throw net_error("troupe::net: node_config.phi_threshold must be a positive number (got " +
                    std::to_string(cfg_.phi_threshold) + ")");
  if (cfg_.phi_min_stddev.count() <= 0 || cfg_.acceptable_heartbeat_pause.count() < 0 || cfg_.phi_window < 2)
    throw net_error(
        "troupe::net: node_config needs phi_min_stddev > 0, acceptable_heartbeat_pause >= 0 and "
        "phi_window >= 2 (got " +
        std::to_string(cfg_.phi_min_stddev.count()) + " ms, " +
        std::to_string(cfg_.acceptable_heartbeat_pause.count()) + " ms, " + std::to_string(cfg_.phi_window) + ")");
  if (cfg_.queue_frames <= 0 || cfg_.batch_bytes < 256)
    throw net_error("troupe::net: node_config needs queue_frames > 0 and batch_bytes >= 256");
  efd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (efd_ < 0) throw net_error("troupe::net: eventfd failed");
}

node_core::~node_core() {
  if (efd_ >= 0) ::close(efd_);
}

void node_core::start() {
  if (cfg_.security == security::curve) {
    zap_ = std::make_unique<zmq::socket_t>(ctx_, zmq::socket_type::router);
    zap_->set(zmq::sockopt::linger, 0);
    zap_->bind("inproc://zeromq.zap.01");
  }
  sink_ = (new proxy{sys_, shared_from_this(), 0, 0, true})->adopt();
  if (!ext::register_shutdown_client(sys_, this)) throw net_error("troupe::net: the actor system is shutting down");
  io_ = std::thread{[this] { run(); }};
}

void node_core::close() {
  stopping_.store(true);
  poke();
  join_io();
  ext::unregister_shutdown_client(sys_, this);
}

void node_core::cancel_for_shutdown() noexcept {
  // The actor system stops while the node is still open: end the I/O
  // thread on a thread of its own (the system holds its clients' lock now,
  // and unregistering takes it).
  stopping_.store(true);
  poke();
  if (cancelled_.exchange(true)) return;
  try {
    std::thread{[self = shared_from_this()] {
      self->join_io();
      ext::unregister_shutdown_client(self->sys_, self.get());
    }}.detach();
  } catch (...) {
    log("could not start a thread to close the node at shutdown");
  }
}

void node_core::join_io() {
  std::call_once(joined_, [this] {
    if (io_.joinable()) io_.join();
  });
}

void node_core::feed(const std::string& peer, const std::vector<std::string>& frames) {
  call<int>([&] {
    for (auto& f : frames) {
      auto it = by_routing_.find(peer);
      handle_frame(it != by_routing_.end() ? it->second : nullptr, &peer, f.data(), f.size());
    }
    return 0;
  });
}

node_stats node_core::stats() const {
  node_stats s;
  s.frames_in = st_.frames_in.load();
  s.frames_out = st_.frames_out.load();
  s.messages_in = st_.messages_in.load();
  s.messages_out = st_.messages_out.load();
  s.malformed = st_.malformed.load();
  s.unknown_types = st_.unknown_types.load();
  s.unsendable = st_.unsendable.load();
  s.unknown_actors = st_.unknown_actors.load();
  s.stale = st_.stale.load();
  s.rejected_keys = st_.rejected_keys.load();
  s.peers_lost = st_.peers_lost.load();
  s.peers_unreachable = st_.peers_unreachable.load();
  s.peers_rejoined = st_.peers_rejoined.load();
  s.flow_pauses = st_.flow_pauses.load();
  s.heartbeats_out = st_.heartbeats_out.load();
  s.duplicates_refused = st_.duplicates_refused.load();
  s.refused_signals = st_.refused_signals.load();
  s.refused_actors = st_.refused_actors.load();
  s.peers_retired = st_.peers_retired.load();
  s.peers = st_.peers.load();
  s.exports = st_.exports.load();
  std::lock_guard<std::mutex> g{proxies_mtx_};
  s.proxies = proxies_.size();
  return s;
}

// The I/O thread's last work (after its loop): tell the peers, end every
// connection, proxy, lookup and export.
void node_core::shutdown_io() {
  run_inputs();
  // Tell the peers (best effort: up to 200 ms for the last frames to leave).
  for (auto& [id, c] : conns_) {
    if (!c->ready) continue;
    put_record(*c, [](writer& w) { wire::put_bye(w); });
    flush(*c);
    if (c->dealer) c->dealer->set(zmq::sockopt::linger, 200);
  }
  if (router_) router_->set(zmq::sockopt::linger, 200);
  std::vector<std::uint64_t> ids;
  ids.reserve(conns_.size());
  for (auto& [id, c] : conns_) ids.push_back(id);
  for (auto id : ids)
    if (auto it = conns_.find(id); it != conns_.end())
      end_session(*it->second, "this node was closed", ending::this_node_closed);
  for (auto* p : ready_) p->release();
  ready_.clear();
  auto lookups = std::exchange(lookups_, {});
  for (auto& [token, l] : lookups) finish_lookup(l, lookup_result{{}, "troupe::net: the node was closed"});
  for (auto it = exports_.begin(); it != exports_.end();) {
    auto next = std::next(it);
    drop_export(it);
    it = next;
  }
  published_.clear();
  if (sink_) {
    static_cast<proxy*>(sink_.get())->end(error{net_errc::remote_unreachable, "node closed"});
    sink_ = actor{};
  }
  pausing_.clear();
  last_pause_ = false;
  flooded_ = actor{};
  router_.reset();
  zap_.reset();
  // Proxies woken after this point are already closed (their enqueue
  // bounces); wake-ups still queued are dropped here.
  std::lock_guard<std::mutex> g{in_mtx_};
  for (auto* p : ready_in_) p->release();
  ready_in_.clear();
  commands_.clear();
}

}  // namespace detail

// ------------------------------------------------------------------ node

node_config& node_config::use(liveness_profile p) {
  using std::chrono::milliseconds;
  switch (p) {
    case liveness_profile::standard:  // as Akka's cluster failure detector; CAF's heartbeat bound
      heartbeat_interval = milliseconds{1000};
      heartbeat_timeout = milliseconds{10000};
      acceptable_heartbeat_pause = milliseconds{3000};
      phi_min_stddev = milliseconds{200};
      break;
    case liveness_profile::lan:  // about 0.6 s to detect on a quiet network, 1 s at most
      heartbeat_interval = milliseconds{100};
      heartbeat_timeout = milliseconds{1000};
      acceptable_heartbeat_pause = milliseconds{200};
      phi_min_stddev = milliseconds{50};
      break;
  }
  phi_threshold = 8.0;
  phi_window = 100;
  return *this;
}

node::node(actor_system& sys, node_config cfg) : core_{std::make_shared<detail::node_core>(sys, std::move(cfg))} {
  core_->start();
}
node::~node() { close(); }
void node::close() { core_->close(); }
std::string node::listen(const std::string& endpoint) { return core_->listen(endpoint); }
void node::publish(const actor& a, const std::string& name) { core_->publish(a, name, 0); }
void node::publish_impl(const actor& a, const std::string& name, std::uint64_t iface) {
  core_->publish(a, name, iface);
}
actor node::remote_actor(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout) {
  return core_->lookup(where, name, timeout, 0);
}
void node::remote_actor_async(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout,
                              std::function<void(lookup_outcome)> done) {
  if (!done) throw net_error("troupe::net: remote_actor_async: no callback");
  core_->lookup_async(where, name, timeout, 0, [done = std::move(done)](detail::lookup_result r) {
    done(lookup_outcome{std::move(r.a), std::move(r.error)});
  });
}
actor node::lookup(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout,
                   std::uint64_t iface) {
  return core_->lookup(where, name, timeout, iface);
}
void detail::feed_frames_for_test(node& n, const std::string& peer, const std::vector<std::string>& frames) {
  n.core_->feed(peer, frames);
}
void node::retire_peer(std::uint64_t incarnation, const std::string& why) { core_->retire(incarnation, why); }
void node::readmit_peer(std::uint64_t incarnation) { core_->readmit(incarnation); }
std::uint64_t node::incarnation() const noexcept { return core_->incarnation(); }
node_stats node::stats() const { return core_->stats(); }

}  // namespace troupe::net
