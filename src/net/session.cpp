// The node's sessions: one connection per peer, opened by a handshake
// (hello, welcome: wire version, the peer's name, the message types it has);
// frames checked against the peer's incarnation and the sequence number per
// direction; our types announced as they are registered; heartbeats; and a
// peer lost (silent for heartbeat_timeout, frames lost, bye) ends
// everything that depended on it (see node_core.hpp).
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
  auto conn = std::make_unique<connection>();
  conn->id = ++next_conn_;
  conn->outgoing = true;
  conn->endpoint = where.endpoint;
  conn->dealer = std::make_unique<zmq::socket_t>(ctx_, zmq::socket_type::dealer);
  tune(*conn->dealer);
  if (cfg_.security == security::curve) {
    conn->dealer->set(zmq::sockopt::curve_serverkey, where.public_key);
    conn->dealer->set(zmq::sockopt::curve_publickey, cfg_.keys.public_key);
    conn->dealer->set(zmq::sockopt::curve_secretkey, cfg_.keys.secret_key);
  }
  try {
    conn->dealer->connect(where.endpoint);
  } catch (const zmq::error_t& e) {
    error = "troupe::net: remote_actor: bad endpoint '" + where.endpoint + "': " + e.what();
    return nullptr;
  }
  connection* c = conn.get();
  conns_[c->id] = std::move(conn);
  by_endpoint_[where.endpoint] = c;
  send_handshake(*c, wire::rec::hello);
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

void node_core::send_handshake(connection& c, wire::rec kind) {
  c.announced = registered_count();
  c.handshake_types = c.announced;
  put_record(
      c, [&](writer& w) { wire::put_handshake(w, kind, cfg_.name, registered_hashes(0, c.announced)); },
      false);  // the handshake is the first record: nothing before it
  flush(c);
}

void node_core::heartbeat(connection& c) {
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
    auto conn = std::make_unique<connection>();
    conn->id = ++next_conn_;
    conn->routing_id = *rid;
    conn->peer_inc = src;
    c = conn.get();
    by_routing_[*rid] = c;
    conns_[c->id] = std::move(conn);
    c->seq_in = 0;
  } else {
    if ((c->ready && src != c->peer_inc) || (dst != inc_ && !(dst == 0 && seq == 0))) {
      st_.stale.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  if (seq != c->seq_in) {
    lose(*c, "frames were lost (expected frame " + std::to_string(c->seq_in) + ", got " + std::to_string(seq) + ")");
    return;
  }
  ++c->seq_in;
  c->last_heard = clock::now();
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
      lose(c, "the node was closed", false);
      return;
    case wire::rec::release:
      on_release(c, wire::read_release(r));
      return;
  }
  throw decode_error("unknown record kind " + std::to_string(static_cast<int>(kind)));
}

void node_core::on_handshake(connection& c, wire::rec kind, reader& r, std::uint64_t src) {
  if ((kind == wire::rec::hello) == c.outgoing) throw decode_error("handshake in the wrong direction");
  if (c.ready) throw decode_error("a second handshake");
  auto h = wire::read_handshake(r);
  c.peer_types = std::unordered_set<std::uint64_t>(h.types.begin(), h.types.end());
  c.peer_name = std::move(h.name);
  c.peer_inc = src;
  c.ready = true;
  if (by_inc_.find(src) == by_inc_.end()) by_inc_[src] = &c;
  st_.peers.store(conns_.size(), std::memory_order_relaxed);
  if (kind == wire::rec::hello) send_handshake(c, wire::rec::welcome);
  for (auto token : std::exchange(c.waiting_lookups, {})) send_lookup(c, token);
}

// ------------------------------------------------------------ time

void node_core::timers() {
  const auto now = clock::now();
  expire_lookups(now);
  // Heartbeats go out also while we do not read (paused); liveness is not
  // judged then, since the peers' frames wait unread.
  const bool judging = !paused_on_;
  std::vector<std::uint64_t> silent;
  for (auto& [id, c] : conns_) {
    if (!c->ready) {
      if (!c->outgoing && now - c->last_heard > cfg_.heartbeat_timeout) silent.push_back(id);
      continue;
    }
    if (judging && now - c->last_heard > cfg_.heartbeat_timeout) silent.push_back(id);
    else if (now - c->last_sent >= cfg_.heartbeat_interval && c->out.empty() && !c->has_stuck()) heartbeat(*c);
  }
  for (auto id : silent) {
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second->last_heard).count();
    lose(*it->second, "no heartbeat for " + std::to_string(ms) + " ms");
  }
}

// ------------------------------------------------------------ failure

void node_core::lose(connection& c, const std::string& why, bool report) {
  const std::uint64_t cid = c.id;
  const std::string what = "troupe::net: lost " + c.describe() + ": " + why;
  if (c.ready) {
    st_.peers_lost.fetch_add(1, std::memory_order_relaxed);
    dead_incs_.insert(c.peer_inc);
    if (report && !stopping_.load()) log("lost " + c.describe() + ": " + why);
  }
  for (auto& [key, requester] : c.requests)
    ext::respond(requester, key.second, error{net_errc::remote_unreachable, what});
  c.requests.clear();
  std::vector<actor> ending;
  {
    std::lock_guard<std::mutex> g{proxies_mtx_};
    ending.reserve(proxies_.size());  // no allocation (nor a release) below, under the lock
    for (auto& [key, p] : proxies_)
      if (key.first == cid)
        if (actor h = p->try_handle()) ending.push_back(std::move(h));
  }
  for (auto& h : ending) static_cast<proxy*>(h.get())->end(error{net_errc::remote_unreachable, what});
  ending.clear();
  for (auto it = exports_.begin(); it != exports_.end();) {
    auto next = std::next(it);
    it->second.holders.erase(cid);
    if (it->second.holders.empty()) drop_export(it);
    it = next;
  }
  for (auto it = lookups_.begin(); it != lookups_.end();) {
    if (it->second.conn == cid) {
      it->second.p->set_value(lookup_result{{}, what});
      it = lookups_.erase(it);
    } else {
      ++it;
    }
  }
  drop_connection(cid);
}

void node_core::drop_connection(std::uint64_t cid) {
  auto it = conns_.find(cid);
  if (it == conns_.end()) return;
  auto& c = *it->second;
  for (auto* p : c.blocked) p->release();
  if (auto b = by_inc_.find(c.peer_inc); b != by_inc_.end() && b->second == &c) by_inc_.erase(b);
  if (!c.routing_id.empty()) by_routing_.erase(c.routing_id);
  if (!c.endpoint.empty()) {
    auto e = by_endpoint_.find(c.endpoint);
    if (e != by_endpoint_.end() && e->second == &c) by_endpoint_.erase(e);
  }
  if (cur_ == &c) cur_ = nullptr;
  conns_.erase(it);
  st_.peers.store(conns_.size(), std::memory_order_relaxed);
}

}  // namespace troupe::net::detail
