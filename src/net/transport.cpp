// The node's transport: ZeroMQ sockets (a ROUTER for the peers that connect
// to us, a DEALER per peer we connect to, the ZAP socket of the key
// allow-list), the I/O thread's poll loop, sending and receiving whole
// frames, and flow control (see node_core.hpp).
//
// Heartbeats and control records have no socket of their own, and need
// none: this thread never stops reading a peer. A receiver over its soft
// limit is paused on its own (actors.cpp: a pause record asks the peer to
// hold back data for that actor), not by leaving frames unread, so the data
// ahead of a heartbeat in a ZeroMQ queue or a TCP stream is always being
// read, at network speed, and every frame read counts as an arrival for the
// failure detector. A second socket per peer would not do better: the
// ROUTER reads all its peers as one, one TCP stream is in order anyway, and
// a second port is one more thing for firewalls and NAT. (Reading used to
// stop for every peer while one local actor was over its limit: heartbeats
// then waited unread, and one slow actor held back all the others. It is
// left as a last resort, for a moment, when a receiver's mailbox gets far
// over its limit anyway: actors.cpp, flooded().)
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "node_core.hpp"

namespace troupe::net::detail {

// ------------------------------------------------------------ frame buffers

frame_pool::~frame_pool() {
  for (auto* b : free_) delete b;
}

zmq::message_t frame_pool::wrap(std::string& frame) {
  std::unique_ptr<buffer> b;
  {
    std::lock_guard<std::mutex> g{mtx_};
    if (!free_.empty()) {
      b.reset(free_.back());
      free_.pop_back();
    }
  }
  if (!b) b = std::make_unique<buffer>();
  b->bytes.swap(frame);
  frame.clear();
  try {
    if (frame.capacity() < reserve_) frame.reserve(reserve_);
    b->home = shared_from_this();
    zmq::message_t m{b->bytes.data(), b->bytes.size(), &give_back, b.get()};
    [[maybe_unused]] buffer* handed = b.release();  // ZeroMQ's now: give_back frees or keeps it
    return m;
  } catch (...) {
    frame.swap(b->bytes);  // the frame stays with the caller
    b->home.reset();
    throw;
  }
}

void frame_pool::give_back(void* /*data*/, void* hint) noexcept {
  auto* b = static_cast<buffer*>(hint);
  const auto home = std::move(b->home);
  if (b->bytes.capacity() <= 4 * home->reserve_) {
    std::lock_guard<std::mutex> g{home->mtx_};
    if (home->free_.size() < home->keep_) {
      home->free_.push_back(b);  // within the capacity reserved: no allocation
      return;
    }
  }
  delete b;
}

// ------------------------------------------------------------ any thread

void node_core::post(std::function<void()> f) {
  {
    std::lock_guard<std::mutex> g{in_mtx_};
    commands_.push_back(std::move(f));
  }
  poke();
}

void node_core::poke() noexcept {
  if (sleeping_.exchange(false)) {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(efd_, &one, sizeof one);
  }
}

std::string node_core::listen(const std::string& endpoint) {
  return call<std::string>([this, endpoint] {
    if (!router_) {
      router_ = std::make_unique<zmq::socket_t>(ctx_, zmq::socket_type::router);
      tune(*router_);
      router_->set(zmq::sockopt::router_mandatory, 1);
      if (cfg_.security == security::curve) {
        router_->set(zmq::sockopt::curve_server, 1);
        router_->set(zmq::sockopt::curve_secretkey, cfg_.keys.secret_key);
        router_->set(zmq::sockopt::zap_domain, "troupe");
      }
    }
    try {
      router_->bind(endpoint);
    } catch (const zmq::error_t& e) {
      throw net_error("troupe::net: cannot listen at '" + endpoint + "': " + e.what());
    }
    poll_dirty_ = true;
    auto bound = router_->get(zmq::sockopt::last_endpoint);
    listening_.push_back(bound);
    return bound;
  });
}

void node_core::tune(zmq::socket_t& s) {
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::sndhwm, cfg_.queue_frames);
  s.set(zmq::sockopt::rcvhwm, cfg_.queue_frames);
  s.set(zmq::sockopt::maxmsgsize, cfg_.max_frame_bytes);
}

// ------------------------------------------------------------ the I/O loop

void node_core::rebuild_poll_set() {
  poll_items_.clear();
  poll_conn_.clear();
  poll_items_.push_back({nullptr, efd_, ZMQ_POLLIN, 0});
  if (zap_) poll_items_.push_back({zap_->handle(), 0, ZMQ_POLLIN, 0});
  poll_control_ = poll_items_.size();
  poll_conn_.resize(poll_control_, 0);
  if (router_) {
    poll_items_.push_back({router_->handle(), 0, ZMQ_POLLIN, 0});
    poll_conn_.push_back(0);
  }
  for (auto& [id, c] : conns_)
    if (c->dealer) {
      poll_items_.push_back({c->dealer->handle(), 0, ZMQ_POLLIN, 0});
      poll_conn_.push_back(id);
    }
  poll_dirty_ = false;
}

void node_core::run() {
  while (!stopping_.load()) {
    run_inputs();
    drain_ready();
    for (auto& [id, c] : conns_) flush(*c);
    timers();
    if (poll_dirty_) rebuild_poll_set();
    // While flooded, only the control items are polled (they come first).
    const bool reading = !flooded();
    const std::size_t polled = reading ? poll_items_.size() : poll_control_;
    // Paused receivers are checked every millisecond for room (as a stuck
    // frame is retried): a drained one resumes its peers at once.
    long timeout = busy() ? 0 : (!pausing_.empty() || !reading || any_stuck()) ? 1 : poll_ms();
    // Right after traffic, an answer usually follows within a round trip:
    // poll without sleeping (yielding the core) for a short while, so
    // that neither it nor the next message pays for waking this thread.
    if (timeout != 0 && clock::now() - last_activity_ < spin_window) {
      timeout = 0;
      std::this_thread::yield();
    }
    if (timeout != 0) {
      sleeping_.store(true);
      std::unique_lock<std::mutex> g{in_mtx_};
      if (!ready_in_.empty() || !commands_.empty()) timeout = 0;
    }
    try {
      zmq::poll(poll_items_.data(), polled, std::chrono::milliseconds{timeout});
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) log(std::string{"poll: "} + e.what());
    }
    sleeping_.store(false);
    if (poll_items_[0].revents & ZMQ_POLLIN) {
      std::uint64_t v;
      [[maybe_unused]] auto n = ::read(efd_, &v, sizeof v);
    }
    if (zap_ && (poll_items_[1].revents & ZMQ_POLLIN)) handle_zap();
    if (!reading) continue;
    // Reading may end connections (poll_dirty_ then): poll_conn_ names
    // them by id, and read_dealer finds a gone one gone.
    for (std::size_t i = poll_control_; i < polled; ++i) {
      if ((poll_items_[i].revents & ZMQ_POLLIN) == 0) continue;
      if (poll_conn_[i] == 0) read_router();
      else read_dealer(poll_conn_[i]);
    }
  }
  shutdown_io();
}

bool node_core::any_stuck() const noexcept {
  for (auto& [id, c] : conns_)
    if (c->has_stuck()) return true;
  return false;
}

long node_core::poll_ms() const noexcept {
  // A quarter of the interval: heartbeats leave at most that late, so the
  // gaps the peers' detectors learn stay close to the interval.
  long ms = static_cast<long>(cfg_.heartbeat_interval.count()) / 4;
  // A lookup times out at its deadline, not at the next heartbeat tick.
  if (!lookups_.empty()) {
    auto next = clock::time_point::max();
    for (const auto& [token, l] : lookups_) next = std::min(next, l.deadline);
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - clock::now()).count();
    ms = std::min(ms, static_cast<long>(std::max<std::int64_t>(left, 1)));
  }
  return std::max(ms, 1L);
}

void node_core::run_inputs() {
  std::vector<std::function<void()>> cmds;
  std::vector<proxy*> rd;
  {
    std::lock_guard<std::mutex> g{in_mtx_};
    cmds.swap(commands_);
    rd.swap(ready_in_);
  }
  for (auto& f : cmds) f();
  for (auto* p : rd) ready_.push_back(p);
}

// ------------------------------------------------------------ sending

bool node_core::send_frame(connection& c, zmq::message_t& frame) {
  try {
    if (c.dealer) {
      if (!c.dealer->send(frame, zmq::send_flags::dontwait)) return false;
    } else {
      if (!router_) return true;  // nothing to send through any more
      if (!router_->send(zmq::buffer(c.routing_id), zmq::send_flags::dontwait | zmq::send_flags::sndmore)) return false;
      router_->send(frame, zmq::send_flags::dontwait);
    }
  } catch (const zmq::error_t& e) {
    // EHOSTUNREACH: the ROUTER no longer knows this peer (its DEALER went,
    // or reconnected as another peer); the session cannot go on and ends
    // at the next timers(). Anything else: the failure detector tells.
    if (e.num() == EHOSTUNREACH) c.broken = true;
    return true;
  }
  st_.frames_out.fetch_add(1, std::memory_order_relaxed);
  c.last_sent = clock::now();
  last_activity_ = c.last_sent;
  return true;
}

void node_core::flush(connection& c) {
  if (c.has_stuck()) {
    if (!send_frame(c, c.stuck)) return;
    c.stuck = zmq::message_t{};
    for (auto* p : c.blocked) ready_.push_back(p);
    c.blocked.clear();
  }
  if (c.out.empty()) return;
  // Small frames are copied (ZeroMQ keeps up to 33 bytes inline, and a
  // copy of a few hundred costs less than the pool's lock); big ones go
  // without a copy.
  zmq::message_t frame =
      c.out.size() < zero_copy_bytes ? zmq::message_t{c.out.data(), c.out.size()} : frames_->wrap(c.out);
  c.out.clear();
  if (!send_frame(c, frame)) c.stuck = std::move(frame);
}

// ------------------------------------------------------------ receiving

// Reading stops after a few frames or milliseconds, so that the loop
// comes back to sending (heartbeats, monitors, releases) and to the timers.
bool node_core::read_budget_left(int frames, clock::time_point since) const {
  return frames < 16 && clock::now() - since < std::chrono::milliseconds{2};
}

void node_core::read_router() {
  const auto since = clock::now();
  for (int budget = 0; read_budget_left(budget, since); ++budget) {
    zmq::message_t id, data;
    try {
      if (!router_->recv(id, zmq::recv_flags::dontwait)) return;
      if (!id.more()) {
        st_.malformed.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      (void)router_->recv(data, zmq::recv_flags::none);
      while (data.more()) {  // extra parts: not ours
        zmq::message_t extra;
        (void)router_->recv(extra, zmq::recv_flags::none);
        st_.malformed.fetch_add(1, std::memory_order_relaxed);
        data.swap(extra);
      }
    } catch (const zmq::error_t&) {
      return;
    }
    std::string rid{static_cast<const char*>(id.data()), id.size()};
    auto it = by_routing_.find(rid);
    handle_frame(it != by_routing_.end() ? it->second : nullptr, &rid, static_cast<const char*>(data.data()),
                 data.size());
    if (flooded_) return;
  }
}

void node_core::read_dealer(std::uint64_t cid) {
  const auto since = clock::now();
  for (int budget = 0; read_budget_left(budget, since); ++budget) {
    auto it = conns_.find(cid);
    if (it == conns_.end() || !it->second->dealer) return;
    zmq::message_t data;
    try {
      if (!it->second->dealer->recv(data, zmq::recv_flags::dontwait)) return;
    } catch (const zmq::error_t&) {
      return;
    }
    handle_frame(it->second.get(), nullptr, static_cast<const char*>(data.data()), data.size());
    if (flooded_) return;
  }
}

// ------------------------------------------------------------ keys

// ZeroMQ's authentication protocol (ZAP, RFC 27): the key allow-list.
void node_core::handle_zap() {
  std::vector<zmq::message_t> parts;
  while (true) {
    zmq::message_t m;
    try {
      if (!zap_->recv(m, zmq::recv_flags::dontwait)) break;
    } catch (const zmq::error_t&) {
      break;
    }
    const bool more = m.more();
    parts.push_back(std::move(m));
    if (!more) break;
  }
  // routing id, empty, version, request id, domain, address, identity, mechanism, key
  if (parts.size() < 9) return;
  const std::string mechanism{static_cast<const char*>(parts[7].data()), parts[7].size()};
  bool ok = false;
  if (mechanism == "CURVE" && parts[8].size() == 32) {
    char z85[41];
    if (zmq_z85_encode(z85, static_cast<const std::uint8_t*>(parts[8].data()), 32) != nullptr)
      ok = trusted_.count(z85) != 0;
  }
  if (!ok) st_.rejected_keys.fetch_add(1, std::memory_order_relaxed);
  auto send = [&](const std::string& s, bool more) {
    zap_->send(zmq::buffer(s), more ? zmq::send_flags::sndmore : zmq::send_flags::none);
  };
  try {
    zap_->send(parts[0], zmq::send_flags::sndmore);
    send("", true);
    send("1.0", true);
    zap_->send(parts[3], zmq::send_flags::sndmore);
    send(ok ? "200" : "400", true);
    send(ok ? "OK" : "public key not trusted", true);
    send("", true);
    send("", false);
  } catch (const zmq::error_t& e) {
    log(std::string{"answering an authentication request failed: "} + e.what());
  }
}

}  // namespace troupe::net::detail
