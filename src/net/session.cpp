// The node's sessions: one connection per peer, opened by a handshake
// (hello, welcome: wire version, the peer's name, the message types it has);
// frames checked against the peer's incarnation and the sequence number per
// direction; our types announced as they are registered; heartbeats; the
// failure detector; and the end of a session (the peer unreachable, frames
// lost, bye), which ends everything that depended on it (see node_core.hpp).
//
// Unreachable is not dead: a session found silent ends, but the peer's
// incarnation is not refused afterwards, so a node that was frozen or cut
// off connects again when it is looked up (or a reference names it) and
// works as before; only a bye or a new incarnation at its endpoint retires
// an incarnation for good.
#include <algorithm>
#include <cstdio>

#include "node_core.hpp"

namespace troupe::net::detail {

std::string hex(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string connection::describe() const {
  std::string s = peer_name.empty() ? std::string{"node"} : "node '" + peer_name + "'";
  if (!endpoint.empty()) s += " at " + endpoint;
  if (peer_inc != 0) s += " (incarnation " + hex(peer_inc) + ")";
  return s;
}

connection* node_core::connect(const remote_address& where, std::string& error) {
  if (auto it = by_endpoint_.find(where.endpoint); it != by_endpoint_.end()) return it->second;
  auto dealer = std::make_unique<zmq::socket_t>(ctx_, zmq::socket_type::dealer);
  tune(*dealer);
  // A connection attempt into a cut network would wait for the kernel's
  // SYN retries (seconds, growing); give up on it after about a heartbeat
  // and let ZeroMQ try again (every 100 ms), so that a healed link is used
  // within about a heartbeat interval.
  dealer->set(zmq::sockopt::connect_timeout,
              static_cast<int>(
                  std::clamp(cfg_.heartbeat_interval, std::chrono::milliseconds{200}, std::chrono::milliseconds{2000})
                      .count()));
  if (cfg_.security == security::curve) {
    dealer->set(zmq::sockopt::curve_serverkey, where.public_key);
    dealer->set(zmq::sockopt::curve_publickey, cfg_.keys.public_key);
    dealer->set(zmq::sockopt::curve_secretkey, cfg_.keys.secret_key);
  }
  try {
    dealer->connect(where.endpoint);
  } catch (const zmq::error_t& e) {
    error = "troupe::net: remote_actor: bad endpoint '" + where.endpoint + "': " + e.what();
    return nullptr;
  }
  connection* c = add_connection();
  c->outgoing = true;
  c->endpoint = where.endpoint;
  c->dealer = std::move(dealer);
  by_endpoint_[where.endpoint] = c;
  poll_dirty_ = true;
  send_handshake(*c, wire::rec::hello);
  return c;
}

connection* node_core::add_connection() {
  auto conn = std::make_unique<connection>();
  conn->id = ++next_conn_;
  conn->liveness.emplace(phi_detector::settings{.threshold = cfg_.phi_threshold,
                                                .acceptable_pause = cfg_.acceptable_heartbeat_pause,
                                                .min_stddev = cfg_.phi_min_stddev,
                                                .hard_timeout = cfg_.heartbeat_timeout,
                                                .first_estimate = cfg_.heartbeat_interval,
                                                .window = cfg_.phi_window},
                         conn->last_heard);
  connection* c = conn.get();
  conns_[c->id] = std::move(conn);
  return c;
}

// ------------------------------------------------------------ writing

std::size_t node_core::begin_record(connection& c, bool announce) {
  if (c.out.empty()) wire::put_header(c.out, wire::frame_header{.src = inc_, .dst = c.peer_inc, .seq = c.seq_out++});
  if (announce && c.ready) announce_types(c);
  return wire::open_record(c.out);
}

void node_core::announce_types(connection& c) {
  const std::size_t n = registered_count();
  if (n == c.announced) return;
  const auto hashes = registered_hashes(c.announced, n);
  c.announced = n;
  const std::size_t at = wire::open_record(c.out);
  writer w{c.out, nullptr};
  wire::put_types(w, hashes);
  end_record(c, at);
}

void node_core::send_handshake(connection& c, wire::rec kind, std::uint8_t flags) {
  c.announced = registered_count();
  c.handshake_types = c.announced;
  put_record(
      c,
      [&](writer& w) {
        wire::put_handshake(w, kind,
                            wire::handshake{.name = cfg_.name,
                                            .types = registered_hashes(0, c.announced),
                                            .endpoints = listening_,
                                            .flags = flags});
      },
      false);  // the handshake is the first record: nothing before it
  flush(c);
}

void node_core::heartbeat(connection& c) {
  st_.heartbeats_out.fetch_add(1, std::memory_order_relaxed);
  begin_record(c);  // an empty record of length 0 would be malformed: drop it again
  c.out.resize(c.out.size() - 4);
  flush(c);
}

// ------------------------------------------------------------ reading

void node_core::handle_frame(connection* c, const std::string* rid, const char* data, std::size_t size) {
  st_.frames_in.fetch_add(1, std::memory_order_relaxed);
  reader r{data, data + size, this};
  wire::frame_header h;
  try {
    h = wire::read_header(r);
  } catch (const decode_error&) {
    st_.malformed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const std::uint64_t src = h.src, dst = h.dst, seq = h.seq;
  if (c == nullptr) {
    // A new peer of the ROUTER: its first frame opens with a hello.
    if (rid == nullptr || dst != 0 || seq != 0 || dead_incs_.count(src) != 0 || src == 0) {
      st_.stale.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    c = add_connection();
    c->routing_id = *rid;
    c->peer_inc = src;
    by_routing_[*rid] = c;
  } else {
    if ((c->ready && src != c->peer_inc) || (dst != inc_ && !(dst == 0 && seq == 0))) {
      st_.stale.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  if (seq != c->seq_in) {
    end_session(*c,
                "frames were lost (expected frame " + std::to_string(c->seq_in) + ", got " + std::to_string(seq) + ")",
                ending::frames_lost);
    return;
  }
  ++c->seq_in;
  c->last_heard = clock::now();
  c->liveness->heard(c->last_heard);
  last_activity_ = c->last_heard;
  const std::uint64_t cid = c->id;
  while (true) {
    reader body{nullptr, nullptr, nullptr};
    try {
      if (!wire::next_record(r, body)) break;
    } catch (const decode_error&) {
      st_.malformed.fetch_add(1, std::memory_order_relaxed);
      return;  // the rest of the frame cannot be delimited
    }
    try {
      handle_record(*c, body, src);
    } catch (const decode_error&) {
      st_.malformed.fetch_add(1, std::memory_order_relaxed);
    } catch (const std::exception&) {
      st_.malformed.fetch_add(1, std::memory_order_relaxed);
    }
    if (conns_.find(cid) == conns_.end()) return;  // the record ended the connection
  }
}

void node_core::handle_record(connection& c, reader& r, std::uint64_t src) {
  cur_ = &c;
  const auto kind = wire::read_kind(r);
  if (!c.ready && kind != wire::rec::hello && kind != wire::rec::welcome)
    throw decode_error("a record before the handshake");
  switch (kind) {
    case wire::rec::hello:
    case wire::rec::welcome:
      on_handshake(c, kind, r, src);
      return;
    case wire::rec::types:
      for (auto h : wire::read_types(r)) c.peer_types.insert(h);
      return;
    case wire::rec::lookup:
      on_lookup(c, wire::read_lookup(r));
      return;
    case wire::rec::lookup_reply:
      on_lookup_reply(wire::read_lookup_reply(r));
      return;
    case wire::rec::data:
      on_data(c, r);
      return;
    case wire::rec::monitor:
      on_monitor(c, wire::read_monitor(r));
      return;
    case wire::rec::down:
      on_down(c, wire::read_down(r));
      return;
    case wire::rec::bye:
      wire::read_bye(r);
      end_session(c, "the node was closed", ending::closed);
      return;
    case wire::rec::pause:
    case wire::rec::resume:
      on_flow(c, kind, wire::read_flow(r));
      return;
    case wire::rec::release:
      on_release(c, wire::read_release(r));
      return;
  }
  throw decode_error("unknown record kind " + std::to_string(static_cast<int>(kind)));
}

// One connection per pair of nodes. A node that connects to a peer tells
// it where it listens (the handshake's endpoints), so the peer, wanting to
// reach that endpoint later, uses the session already there instead of
// opening its own (connect() finds it in by_endpoint_). When both connect
// at the same time, each gets the other's hello while its own connection
// is pending (or just ready), and both apply the same rule: the
// connection opened by the node with the lower incarnation stays. That
// node answers the other's hello with a welcome flagged duplicate and
// forgets that session; the other accepts the winner's hello normally and
// drops its own connection, whose waiting lookups move to the session that
// stays (they are sent only once a session is ready, so nothing was sent
// on the one dropped). Only endpoint strings are compared: a peer reached
// by another name than the one it bound ("tcp://host:7000" for
// "tcp://0.0.0.0:7000") may keep two sessions, as before.
connection* node_core::own_connection_to(std::uint64_t inc, const std::vector<std::string>& endpoints) {
  if (auto it = by_inc_.find(inc); it != by_inc_.end() && it->second->outgoing) return it->second;
  for (const auto& e : endpoints) {
    auto it = by_endpoint_.find(e);
    if (it != by_endpoint_.end() && it->second->outgoing && (it->second->peer_inc == 0 || it->second->peer_inc == inc))
      return it->second;
  }
  return nullptr;
}

void node_core::move_lookups(connection& from, connection& to) {
  for (auto token : std::exchange(from.waiting_lookups, {})) {
    auto it = lookups_.find(token);
    if (it == lookups_.end()) continue;
    it->second.conn = to.id;
    if (to.ready) send_lookup(to, token);
    else to.waiting_lookups.push_back(token);
  }
}

void node_core::on_handshake(connection& c, wire::rec kind, reader& r, std::uint64_t src) {
  if ((kind == wire::rec::hello) == c.outgoing) throw decode_error("handshake in the wrong direction");
  if (c.ready || c.superseded) throw decode_error("a second handshake");
  auto h = wire::read_handshake(r);
  if (kind == wire::rec::welcome && (h.flags & wire::handshake_duplicate) != 0) {
    // The peer keeps the connection it opened to us: this one waits (its
    // lookups with it) for that session's hello, or hands them over now.
    c.superseded = true;
    c.peer_inc = src;
    c.dealer.reset();
    poll_dirty_ = true;
    auto other = by_inc_.find(src);
    if (other == by_inc_.end() || !other->second->ready) {
      if (c.waiting_lookups.empty()) drop_connection(c.id);  // nothing waits for the peer's session
      return;
    }
    move_lookups(c, *other->second);
    if (!c.endpoint.empty()) by_endpoint_[c.endpoint] = other->second;
    drop_connection(c.id);
    return;
  }
  if (dead_incs_.count(src) != 0) {
    // A welcome, on a connection of ours, from an incarnation that is gone
    // here (a retired peer that still runs): what waits on it fails now.
    st_.stale.fetch_add(1, std::memory_order_relaxed);
    c.peer_inc = src;
    end_session(c,
                "the node answering there, incarnation " + hex(src) +
                    (retired_incs_.count(src) != 0 ? ", was retired (node::retire_peer)" : ", closed or restarted"),
                ending::broken);
    return;
  }
  connection* mine = kind == wire::rec::hello ? own_connection_to(src, h.endpoints) : nullptr;
  if (mine != nullptr && mine->ready && inc_ > src) mine = nullptr;  // not a race we can settle: keep both
  if (mine != nullptr && inc_ < src) {
    // Ours stays: refuse this one (the peer hands its lookups to ours).
    c.peer_inc = src;
    st_.duplicates_refused.fetch_add(1, std::memory_order_relaxed);
    send_handshake(c, wire::rec::welcome, wire::handshake_duplicate);
    drop_connection(c.id);
    return;
  }
  c.peer_types = std::unordered_set<std::uint64_t>(h.types.begin(), h.types.end());
  c.peer_name = std::move(h.name);
  c.peer_inc = src;
  c.ready = true;
  by_inc_[src] = &c;  // the newest session with that incarnation
  if (kind == wire::rec::hello) {
    // The peer can be reached through this session wherever it listens.
    if (c.endpoint.empty() && !h.endpoints.empty()) c.endpoint = h.endpoints.front();
    for (const auto& e : h.endpoints) by_endpoint_[e] = &c;
  }
  if (unreachable_incs_.erase(src) != 0) {
    st_.peers_rejoined.fetch_add(1, std::memory_order_relaxed);
    log("reconnected to " + c.describe() + " (it was unreachable)");
  }
  if (!c.endpoint.empty()) {
    if (auto u = unreachable_at_.find(c.endpoint); u != unreachable_at_.end()) {
      // Another incarnation answers where an unreachable one was: that one
      // restarted, and nothing may reach it any more.
      if (u->second.inc != src) dead_incs_.insert(u->second.inc);
      unreachable_at_.erase(u);
    }
  }
  if (kind == wire::rec::hello) send_handshake(c, wire::rec::welcome);
  for (auto token : std::exchange(c.waiting_lookups, {})) send_lookup(c, token);
  // Our own pending connections to this peer (the race lost, or refused as
  // a duplicate earlier) give their lookups to this session and go.
  std::vector<connection*> replaced;
  if (mine != nullptr && !mine->ready) replaced.push_back(mine);
  for (auto& [id, o] : conns_)
    if (o.get() != mine && o->superseded && o->peer_inc == src) replaced.push_back(o.get());
  for (auto* o : replaced) {
    move_lookups(*o, c);
    drop_connection(o->id);
  }
  st_.peers.store(conns_.size(), std::memory_order_relaxed);
}

// ------------------------------------------------------------ time

void node_core::timers() {
  const auto now = clock::now();
  forgive_stall(now);
  expire_lookups(now);
  if (!pausing_.empty()) check_pauses(now);
  std::vector<std::pair<std::uint64_t, std::string>> ended;
  for (auto& [id, c] : conns_) {
    if (c->broken) {
      ended.emplace_back(id, "its side of the connection was closed");
      continue;
    }
    if (!c->ready) {
      if (!c->outgoing && now - c->last_heard > cfg_.heartbeat_timeout) ended.emplace_back(id, "no handshake");
      continue;
    }
    if (!flooded_ && c->liveness->suspect(now)) {  // not while this node is not reading
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(c->liveness->silence(now)).count();
      char phi[32];
      std::snprintf(phi, sizeof phi, "%.1f", c->liveness->phi(now));
      ended.emplace_back(id, "nothing heard for " + std::to_string(ms) + " ms (phi " + phi + ", threshold " +
                                 std::to_string(static_cast<int>(cfg_.phi_threshold)) + ")");
      continue;
    }
    // Heartbeats: when nothing else was sent for an interval. A frame stuck
    // in ZeroMQ's full queue needs none: the peer reads what is ahead of it
    // (nothing stops reading for a slow receiver: flow control is per actor),
    // and every frame it reads counts as an arrival.
    if (now - c->last_sent >= cfg_.heartbeat_interval && c->out.empty() && !c->has_stuck()) heartbeat(*c);
  }
  for (auto& [id, why] : ended) {
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    const bool silent = it->second->ready && !it->second->broken;
    end_session(*it->second, why, silent ? ending::unreachable : ending::broken);
  }
}

void node_core::forgive_stall(clock::time_point now) {
  // The loop comes back here at least every poll_ms() (plus a few ms of
  // reading); longer, and this thread was not running: starved by a loaded
  // machine, or the whole process stopped (SIGSTOP, a debugger, a VM pause).
  // Frames the peers sent meanwhile wait unread in the sockets; judging
  // them now would report every peer as silent (and once did, after a
  // SIGCONT: the resumed node refused its live peers for good).
  const auto stall = now - last_tick_;
  last_tick_ = now;
  const auto normal = std::chrono::milliseconds{poll_ms() + 50};
  if (stall <= normal) return;
  for (auto& [id, c] : conns_) {
    c->liveness->forgive(stall - normal);
    c->last_heard = std::max(c->last_heard, now - normal);
  }
}

// ------------------------------------------------------------ the end of a session

void node_core::end_session(connection& c, const std::string& why, ending how) {
  const std::uint64_t cid = c.id;
  const bool unreachable = how == ending::unreachable || how == ending::frames_lost || how == ending::broken;
  const std::string what = "troupe::net: " + std::string{unreachable ? "" : "lost "} + c.describe() +
                           (unreachable ? " is unreachable: " : ": ") + why;
  if (c.ready) {
    st_.peers_lost.fetch_add(1, std::memory_order_relaxed);
    if (how == ending::closed) {
      dead_incs_.insert(c.peer_inc);
    } else if (unreachable) {
      if (how == ending::unreachable) st_.peers_unreachable.fetch_add(1, std::memory_order_relaxed);
      if (unreachable_incs_.size() > 4096) unreachable_incs_.clear();  // a bound: only the statistics need it
      unreachable_incs_.insert(c.peer_inc);
      if (!c.endpoint.empty())
        unreachable_at_[c.endpoint] = unreachable_peer{c.peer_inc, c.describe(), why, clock::now()};
    }
    bool other = false;  // an older session the peer replaced by a newer one
    for (auto& [id, o] : conns_) other = other || (o.get() != &c && o->ready && o->peer_inc == c.peer_inc);
    if (how != ending::closed && how != ending::this_node_closed && !stopping_.load())
      log(std::string{unreachable ? "" : "lost "} + c.describe() + (unreachable ? " is unreachable: " : ": ") + why +
          (other         ? " (an older connection; a newer one is open)"
           : unreachable ? "; it may come back (a new lookup or reference reconnects)"
                         : ""));
  }
  for (auto& [key, requester] : c.requests)
    ext::respond(requester, key.second, error{net_errc::remote_unreachable, what});
  c.requests.clear();
  std::vector<actor> ending_proxies;
  {
    std::lock_guard<std::mutex> g{proxies_mtx_};
    ending_proxies.reserve(proxies_.size());  // no allocation (nor a release) below, under the lock
    for (auto& [key, p] : proxies_)
      if (key.first == cid)
        if (actor h = p->try_handle()) ending_proxies.push_back(std::move(h));
  }
  for (auto& h : ending_proxies) static_cast<proxy*>(h.get())->end(error{net_errc::remote_unreachable, what});
  ending_proxies.clear();
  for (auto it = exports_.begin(); it != exports_.end();) {
    auto next = std::next(it);
    it->second.holders.erase(cid);
    if (it->second.holders.empty()) drop_export(it);
    it = next;
  }
  for (auto it = lookups_.begin(); it != lookups_.end();) {
    if (it->second.conn == cid) {
      auto l = std::move(it->second);
      it = lookups_.erase(it);
      finish_lookup(l, lookup_result{{}, what});
    } else {
      ++it;
    }
  }
  drop_connection(cid);
}

void node_core::retire(std::uint64_t inc, std::string why) {
  if (stopping_.load() || inc == 0 || inc == inc_) return;
  post([this, inc, why = std::move(why)] {
    if (!dead_incs_.insert(inc).second) return;  // closed, restarted or retired already
    retired_incs_.insert(inc);
    st_.peers_retired.fetch_add(1, std::memory_order_relaxed);
    unreachable_incs_.erase(inc);
    for (auto it = unreachable_at_.begin(); it != unreachable_at_.end();)
      it = it->second.inc == inc ? unreachable_at_.erase(it) : std::next(it);
    std::vector<std::uint64_t> ending;
    for (auto& [id, c] : conns_)
      if (c->peer_inc == inc) ending.push_back(id);
    bool any = false;
    for (auto id : ending)
      if (auto it = conns_.find(id); it != conns_.end()) {
        any = any || it->second->ready;
        end_session(*it->second, "retired: " + why, ending::closed);
      }
    log("retired the peer of incarnation " + hex(inc) + (any ? "" : " (no session open)") + ": " + why);
  });
}

void node_core::readmit(std::uint64_t inc) {
  if (stopping_.load()) return;
  post([this, inc] {
    if (retired_incs_.erase(inc) != 0) dead_incs_.erase(inc);
  });
}

void node_core::drop_connection(std::uint64_t cid) {
  auto it = conns_.find(cid);
  if (it == conns_.end()) return;
  auto& c = *it->second;
  for (auto* p : c.blocked) p->release();
  for (auto* p : c.held) p->release();
  if (auto b = by_inc_.find(c.peer_inc); b != by_inc_.end() && b->second == &c) {
    by_inc_.erase(b);
    for (auto& [id, o] : conns_)  // another session with that incarnation takes over
      if (o.get() != &c && o->ready && o->peer_inc == c.peer_inc) by_inc_[c.peer_inc] = o.get();
  }
  if (!c.routing_id.empty()) by_routing_.erase(c.routing_id);
  for (auto e = by_endpoint_.begin(); e != by_endpoint_.end();) {  // an incoming session may be under several
    if (e->second == &c) e = by_endpoint_.erase(e);
    else ++e;
  }
  if (c.dealer) poll_dirty_ = true;
  if (cur_ == &c) cur_ = nullptr;
  conns_.erase(it);
  st_.peers.store(conns_.size(), std::memory_order_relaxed);
}

}  // namespace troupe::net::detail
