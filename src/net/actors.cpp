// The node's actors: proxies (remote actors as local cells, drained by the
// I/O thread onto their connection), exports (local actors that peers hold
// references to, counted per connection), lookups of published names,
// monitors across nodes, and the data records between local actors and the
// wire (see node_core.hpp).
#include <algorithm>

#include "node_core.hpp"

namespace troupe::net::detail {

void proxy::notify() noexcept { core_->ready(this); }
void proxy::on_end() noexcept { core_->proxy_gone(this); }

// ------------------------------------------------------------ any thread

void node_core::ready(proxy* p) noexcept {
  p->add_ref();
  try {
    std::lock_guard<std::mutex> g{in_mtx_};
    ready_in_.push_back(p);
  } catch (...) {
    p->release();  // out of memory: the message stays queued until the next wake
    return;
  }
  poke();
}

void node_core::proxy_gone(proxy* p) noexcept {
  {
    std::lock_guard<std::mutex> g{proxies_mtx_};
    auto it = proxies_.find({p->conn(), p->rid()});
    if (it != proxies_.end() && it->second == p) proxies_.erase(it);
  }
  if (p->is_sink() || p->decoded == 0 || stopping_.load()) return;
  try {
    post([this, c = p->conn(), id = p->rid(), n = p->decoded] { send_release(c, id, n); });
  } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory; the export then stays until the connection ends
  }
}

void node_core::publish(const actor& a, const std::string& name, std::uint64_t iface) {
  if (!a) throw net_error("troupe::net: publish: the handle is empty");
  call<int>([this, a, name, iface] {
    published_[name] = published{a, iface};
    return 0;
  });
}

void node_core::lookup_async(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout,
                             std::uint64_t iface, lookup_done done) {
  if (cfg_.security == security::curve && !is_z85_key(where.public_key))
    throw net_error("troupe::net: remote_actor('" + where.endpoint +
                    "'): the node's public key is missing or not a Z85 CURVE key (40 characters)");
  if (stopping_.load()) throw net_error("troupe::net: the node is closed");
  post([this, where, name, timeout, iface, done = std::move(done)]() mutable {
    start_lookup(where, name, timeout, iface, std::move(done));
  });
}

// The blocking lookup is the asynchronous one and a wait: the I/O thread
// times it out (expire_lookups, at its deadline), so the caller's thread
// only sleeps on the future.
actor node_core::lookup(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout,
                        std::uint64_t iface) {
  auto p = std::make_shared<std::promise<lookup_result>>();
  auto fut = p->get_future();
  lookup_async(where, name, timeout, iface, [p](lookup_result r) { p->set_value(std::move(r)); });
  if (fut.wait_for(timeout + std::chrono::seconds{5}) != std::future_status::ready)
    throw net_error("troupe::net: remote_actor('" + where.endpoint + "'): the node's I/O thread did not answer");
  auto r = fut.get();
  if (!r.error.empty()) throw net_error(r.error);
  return std::move(r.a);
}

// ------------------------------------------------------------ lookups

void node_core::start_lookup(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout,
                             std::uint64_t iface, lookup_done done) {
  std::string error;
  connection* c = connect(where, error);
  if (c == nullptr) {
    pending_lookup l{.done = std::move(done)};
    finish_lookup(l, lookup_result{{}, std::move(error)});
    return;
  }
  auto token = ++next_token_;
  lookups_[token] =
      pending_lookup{std::move(done), c->id, name, iface, clock::now() + timeout, where.endpoint, timeout};
  if (c->ready) send_lookup(*c, token);
  else c->waiting_lookups.push_back(token);
}

void node_core::finish_lookup(pending_lookup& l, lookup_result r) {
  if (!l.done) return;
  try {
    std::exchange(l.done, {})(std::move(r));
  } catch (const std::exception& e) {
    log(std::string{"a lookup's callback threw: "} + e.what());
  } catch (...) {
    log("a lookup's callback threw");
  }
}

void node_core::send_lookup(connection& c, std::uint64_t token) {
  auto it = lookups_.find(token);
  if (it == lookups_.end()) return;
  put_record(c, [&](writer& w) {
    wire::put_lookup(w, wire::lookup{.token = token, .name = it->second.name, .iface = it->second.iface});
  });
}

void node_core::expire_lookups(clock::time_point now) {
  std::vector<std::uint64_t> expired;
  for (auto& [token, l] : lookups_)
    if (now >= l.deadline) expired.push_back(token);
  for (auto token : expired) {
    auto l = std::move(lookups_[token]);
    lookups_.erase(token);
    auto ct = conns_.find(l.conn);
    const bool connected = ct != conns_.end() && ct->second->ready;
    std::string why;
    if (connected) {
      why = " (connected, but the lookup was not answered)";
    } else if (auto u = unreachable_at_.find(l.endpoint); u != unreachable_at_.end()) {
      // The handshake worked before: the keys are right and the node was
      // there. Say what happened to it instead of guessing at keys.
      const auto ago = std::chrono::duration_cast<std::chrono::milliseconds>(now - u->second.when).count();
      why = " (no handshake: " + u->second.who + " became unreachable " + std::to_string(ago) + " ms ago (" +
            u->second.why + ") and has not answered since: it may be stopped, overloaded or cut off)";
    } else {
      why =
          " (no handshake: nobody listens there, or the keys do not match: the server key given here, or this "
          "node's key not trusted there)";
    }
    finish_lookup(l, lookup_result{{},
                                   "troupe::net: remote_actor('" + l.endpoint + "', '" + l.name +
                                       "'): no answer within " + std::to_string(l.timeout.count()) + " ms" + why});
    if (ct != conns_.end() && !ct->second->ready) {
      bool others = false;
      for (auto& [t2, l2] : lookups_) others = others || l2.conn == l.conn;
      if (!others) drop_connection(l.conn);
    }
  }
}

void node_core::on_lookup(connection& c, const wire::lookup& l) {
  auto it = published_.find(l.name);
  std::uint8_t status = wire::lookup_ok;
  std::string detail;
  actor a;
  if (it == published_.end()) {
    status = wire::lookup_unknown;
    detail = "no actor is published as '" + l.name + "' there";
  } else if (l.iface != 0 && it->second.iface != l.iface) {
    status = wire::lookup_mismatch;
    detail = "the actor published as '" + l.name + "' has another interface";
  } else {
    a = it->second.a;
  }
  put_record(c, [&](writer& w) {
    wire::put_lookup_reply(w,
                           wire::lookup_reply{.token = l.token, .status = status, .a = ref_of(c, a), .detail = detail});
  });
}

void node_core::on_lookup_reply(const wire::lookup_reply& l) {
  actor a = resolve(l.a);
  auto it = lookups_.find(l.token);
  if (it == lookups_.end()) return;  // timed out meanwhile
  auto pending = std::move(it->second);
  lookups_.erase(it);
  if (l.status == wire::lookup_ok && a) finish_lookup(pending, lookup_result{std::move(a), {}});
  else
    finish_lookup(
        pending, lookup_result{
                     {}, "troupe::net: remote_actor('" + pending.endpoint + "', '" + pending.name + "'): " + l.detail});
}

// ------------------------------------------------------------ references

void node_core::write_actor(writer& w, const actor& a) { wire::put_actor(w, ref_of(*cur_, a)); }

actor node_core::read_actor(reader& r) { return resolve(wire::read_actor(r)); }

wire::actor_ref node_core::ref_of(connection& c, const actor& a) {
  if (!a) return {};
  if (a.get() == c.last_sender) {
    ++*c.last_sender_count;
    return {inc_, a.id()};
  }
  if (auto* p = dynamic_cast<proxy*>(a.get()); p != nullptr && !p->is_sink()) {
    // An actor of c's peer goes back as the peer's own. An actor of a
    // third node (a proxy on another connection) is exported like a local
    // actor: the reader gets a handle to this node's proxy, and what it
    // sends is forwarded by this node (drain_ready), answers included
    // (their sender, the reader's actor, is exported the same way on the
    // third node's connection). Forwarding, not a connection the reader
    // opens to the third node: it works whatever the reader can reach or
    // is trusted by, needs no endpoint or key in every reference, and opens
    // no connection per handle passed around; it costs a hop. Monitors
    // work through the hop too: this node's proxy ends when the third
    // node's actor does, and its export tells the reader.
    auto it = conns_.find(p->conn());
    if (it != conns_.end() && it->second->peer_inc == c.peer_inc) return {c.peer_inc, p->rid()};
  }
  auto [it, fresh] = exports_.try_emplace(a.id());
  if (fresh) {
    it->second.a = a;
    st_.exports.store(exports_.size(), std::memory_order_relaxed);
  }
  auto& count = it->second.holders[c.id];
  ++count;
  c.last_sender = a.get();
  c.last_sender_count = &count;
  return {inc_, a.id()};
}

actor node_core::resolve(const wire::actor_ref& ref) {
  if (ref.id == 0) return actor{};
  if (ref.origin == inc_) {
    auto it = exports_.find(ref.id);
    if (it == exports_.end()) {
      st_.unknown_actors.fetch_add(1, std::memory_order_relaxed);
      return actor{};
    }
    if (!reachable(it->second, *cur_)) {  // a peer naming one of our actors it was not handed
      refuse(*cur_, st_.refused_actors, "a reference to local actor " + std::to_string(ref.id));
      return actor{};
    }
    return it->second.a;
  }
  connection* c = cur_;
  if (ref.origin != c->peer_inc) {
    auto it = by_inc_.find(ref.origin);
    if (it == by_inc_.end()) return actor{};  // a third node this one is not connected to
    c = it->second;
  }
  return proxy_for(*c, ref.id);
}

// ------------------------------------------------------------ proxies

actor node_core::proxy_for(connection& c, std::uint64_t rid) {
  if (rid == c.last_from_rid && c.last_from && !c.last_from->terminated()) {
    ++static_cast<proxy*>(c.last_from.get())->decoded;
    return c.last_from;
  }
  actor a = find_or_make_proxy(c, rid);
  c.last_from_rid = rid;
  c.last_from = a;
  return a;
}

actor node_core::find_or_make_proxy(connection& c, std::uint64_t rid) {
  {
    std::lock_guard<std::mutex> g{proxies_mtx_};
    auto it = proxies_.find({c.id, rid});
    if (it != proxies_.end()) {
      if (actor a = it->second->try_handle()) {
        ++it->second->decoded;
        return a;
      }
    }
  }
  auto* p = new proxy{sys_, shared_from_this(), c.id, rid, false};
  p->decoded = 1;
  actor a = p->adopt();
  {
    std::lock_guard<std::mutex> g{proxies_mtx_};
    proxies_[{c.id, rid}] = p;
  }
  connection* keep = cur_;
  put_record(c, [&](writer& w) { wire::put_monitor(w, rid); });
  cur_ = keep;
  return a;
}

void node_core::drain_ready() {
  std::size_t rounds = ready_.size();
  while (rounds-- > 0 && !ready_.empty()) {
    proxy* p = ready_.front();
    ready_.pop_front();
    if (p->terminated()) {
      p->release();
      continue;
    }
    connection* c = nullptr;
    if (!p->is_sink()) {
      auto it = conns_.find(p->conn());
      if (it == conns_.end()) {  // its connection ended (the proxy is ending too)
        p->release();
        continue;
      }
      c = it->second.get();
      if (c->has_stuck()) {
        c->blocked.push_back(p);
        continue;
      }
      if (!c->paused_rids.empty() && c->paused_rids.count(p->rid()) != 0) {
        c->held.push_back(p);  // its receiver is over its limit: until the peer resumes it
        continue;
      }
    }
    std::size_t taken = 0;
    bool room = true;
    while (taken < 4096 && room) {
      auto m = p->take();
      if (!m) break;
      ++taken;
      if (p->is_sink()) handle_sink(std::move(m));
      else room = forward(*c, *p, std::move(m));
    }
    if (p->settle_taken(taken) == 0) {
      p->release();
    } else if (c != nullptr && c->has_stuck()) {
      c->blocked.push_back(p);
    } else {
      ready_.push_back(p);
    }
  }
}

bool node_core::forward(connection& c, proxy& p, ext::mail m) {
  // A message that cannot go fails with `e`: a request answers its sender
  // here; a response goes on as `e`, so the requester on the other node
  // learns why at once instead of waiting out its timeout.
  // Takes back the record opened at `at` (and its frame's header when it
  // was the frame's first).
  auto drop_record = [&c](std::size_t at) {
    c.out.resize(at);
    if (c.out.size() == wire::header_bytes) c.out.clear(), --c.seq_out;
  };
  auto cannot_send = [&](error e) {
    st_.unsendable.fetch_add(1, std::memory_order_relaxed);
    if (m.is_response() && !m.holds<error>() && c.ready)
      return forward(c, p, ext::make_mail(m.sender(), m.id(), std::move(e)));
    fail_message(m, e);
    return true;
  };
  const message_type* t = (m.type() == last_type_id_) ? last_type_ : find_message(m.type());
  if (t == nullptr)
    return cannot_send(error{errc::runtime_error, "troupe::net: the message type " + readable_type_name(m.type_name()) +
                                                      " is not registered on node '" + cfg_.name +
                                                      "' (troupe::net::add_message)"});
  last_type_id_ = m.type();
  last_type_ = t;
  if (!c.ready) {
    fail_message(m, error{net_errc::remote_unreachable, "troupe::net: " + c.describe() + " is not connected"});
    return true;
  }
  // A type the peer did not list fails here, at once, unless it was
  // registered after this connection's handshake: the peer may have
  // registered it too and not told us yet (its announcement comes with its
  // next record); it is sent, and a peer without it counts it as unknown.
  if (t->hash != c.last_known_hash && c.peer_types.find(t->hash) == c.peer_types.end() && t->index < c.handshake_types)
    return cannot_send(error{errc::runtime_error,
                             "troupe::net: " + c.describe() + " has no message type '" + t->name + "' registered"});
  c.last_known_hash = t->hash;
  const std::size_t at = begin_record(c);
  try {
    writer w{c.out, this};
    cur_ = &c;
    wire::put_data_head(w, wire::data_head{.flags = static_cast<std::uint8_t>(m.is_system() ? wire::flag_urgent : 0),
                                           .tag = m.tag(),
                                           .dest = p.rid(),
                                           .sender = ref_of(c, m.sender()),
                                           .id = m.id(),
                                           .hash = t->hash});
    t->encode(w, m);
  } catch (const std::exception& e) {
    drop_record(at);
    return cannot_send(error{errc::runtime_error, "troupe::net: cannot write " + t->name + ": " + e.what()});
  }
  end_record(c, at);
  // A frame over the receiver's ZeroMQ limit (max_frame_bytes, the same on
  // both nodes unless configured otherwise) would drop the connection and
  // with it every actor behind it: a message too big for a frame of its own
  // is refused here, and one that fits alone goes in a frame of its own.
  if (const auto limit = static_cast<std::size_t>(cfg_.max_frame_bytes); c.out.size() > limit) {
    const std::size_t bytes = c.out.size() - at;
    if (wire::header_bytes + bytes > limit) {
      drop_record(at);
      return cannot_send(error{errc::runtime_error, "troupe::net: a " + t->name + " message of " +
                                                        std::to_string(bytes) + " bytes is over max_frame_bytes (" +
                                                        std::to_string(limit) + "), the most a frame may carry"});
    }
    std::string alone = c.out.substr(at);
    c.out.resize(at);
    flush(c);  // what came before it, in a frame of its own
    if (c.out.empty()) wire::put_header(c.out, wire::frame_header{.src = inc_, .dst = c.peer_inc, .seq = c.seq_out++});
    c.out += alone;
  }
  st_.messages_out.fetch_add(1, std::memory_order_relaxed);
  if (m.is_request() && m.sender()) c.requests.emplace(std::make_pair(m.sender().id(), m.id()), m.sender());
  if (c.out.size() >= cfg_.batch_bytes) flush(c);
  return !c.has_stuck();
}

void node_core::fail_message(const ext::mail& m, const error& e) {
  ext::count_dead_letter(sys_);
  if (m.is_request()) ext::respond(m.sender(), m.id(), e);
}

void node_core::handle_sink(ext::mail m) {
  if (!m.holds<down_msg>()) return;
  auto& d = std::get<0>(m.values<down_msg>());
  auto it = exports_.find(d.source.id());
  if (it == exports_.end()) return;
  for (auto& [cid, count] : it->second.holders) {
    auto ct = conns_.find(cid);
    if (ct != conns_.end()) send_down(*ct->second, d.source.id(), d.reason);
  }
}

// ------------------------------------------------------------ records

void node_core::on_data(connection& c, reader& r) {
  const auto h = wire::read_data_head(r);
  actor sender = resolve(h.sender);
  if (ext::is_response(h.id)) c.requests.erase({h.dest, ext::request_of(h.id)});
  const bool is_request = ext::is_request(h.id);
  const message_type* t = h.hash == last_hash_ ? last_hash_type_ : find_message(h.hash);
  if (t != nullptr) {
    last_hash_ = h.hash;
    last_hash_type_ = t;
  }
  if (t == nullptr) {
    st_.unknown_types.fetch_add(1, std::memory_order_relaxed);
    if (is_request)
      ext::respond(
          sender, h.id,
          error{errc::runtime_error, "troupe::net: the receiving node has no message type with this name registered"});
    return;
  }
  export_entry* entry = h.dest == last_dest_id_ ? last_dest_ : nullptr;
  if (entry == nullptr) {
    if (auto it = exports_.find(h.dest); it != exports_.end()) {
      entry = &it->second;
      last_dest_id_ = h.dest;
      last_dest_ = entry;
    }
  }
  if (entry == nullptr) {
    st_.unknown_actors.fetch_add(1, std::memory_order_relaxed);
    ext::count_dead_letter(sys_);
    if (is_request)
      ext::respond(sender, h.id,
                   error{errc::actor_exited,
                         "troupe::net: the receiver is not exported by its node (it ended, or was never published)"});
    return;
  }
  if (cfg_.untrusted_peers) {
    // A peer that is not trusted reaches only the actors it was handed, and
    // sends no signal that ends or misleads one (the runtime itself sends
    // none of them as data: remote exits and downs travel as down records).
    const bool signal = t->type_id == ext::type_id_of<exit_msg> || t->type_id == ext::type_id_of<ext::kill_msg> ||
                        t->type_id == ext::type_id_of<down_msg>;
    const bool handed = reachable(*entry, c);
    if (signal || !handed) {
      ext::count_dead_letter(sys_);
      if (signal)
        refuse(c, st_.refused_signals, "a message of type " + t->name + " for local actor " + std::to_string(h.dest));
      else refuse(c, st_.refused_actors, "a message for local actor " + std::to_string(h.dest) + " (not handed to it)");
      if (is_request)
        ext::respond(sender, h.id,
                     error{errc::runtime_error, "troupe::net: refused by node '" + cfg_.name + "' (untrusted peers)"});
      return;
    }
  }
  auto m = t->decode(r, std::move(sender), h.id);
  m.set_tag(h.tag);
  st_.messages_in.fetch_add(1, std::memory_order_relaxed);
  const actor& to = entry->a;
  ext::deliver(to, std::move(m), (h.flags & wire::flag_urgent) != 0 ? priority::urgent : priority::normal);
  if (const auto n = to->mailbox_size(); n > sys_.mailbox_soft_limit() && !to->terminated()) {
    ask_pause(c, h.dest, to);
    if (n > 4 * sys_.mailbox_soft_limit() && !flooded_) {
      flooded_ = to;
      flooded_since_ = clock::now();
    }
  }
}

// ------------------------------------------------------------ flow control

// Backpressure per receiving actor: a local actor over its mailbox's soft
// limit makes the peers that send to it hold back their data for it (in
// their proxies' mailboxes, which their local senders see grow), while
// everything else, other actors, stream credits, heartbeats, flows on. What
// was in flight when the pause left still lands in the mailbox (the soft
// limit is soft), bounded by the queues between the two nodes.
void node_core::ask_pause(connection& c, std::uint64_t id, const actor& to) {
  // A flooded receiver stays over its limit for many messages in a row:
  // the pause asked last answers them without the map (remote_throughput:
  // 28 instructions per message on the receiving node).
  if (last_pause_ && last_pause_id_ == id && last_pause_conn_ == c.id) return;
  auto& fp = pausing_[id];
  last_pause_ = true;
  last_pause_id_ = id;
  last_pause_conn_ = c.id;
  if (!fp.a) {
    fp.a = to;
    fp.since = clock::now();
  }
  if (std::find(fp.conns.begin(), fp.conns.end(), c.id) != fp.conns.end()) return;
  fp.conns.push_back(c.id);
  st_.flow_pauses.fetch_add(1, std::memory_order_relaxed);
  put_record(c, [&](writer& w) { wire::put_flow(w, wire::rec::pause, id); });
  flush(c);
}

void node_core::check_pauses(clock::time_point now) {
  const std::size_t resume_at = sys_.mailbox_soft_limit() / 2;
  for (auto it = pausing_.begin(); it != pausing_.end();) {
    auto& fp = it->second;
    if (!fp.a->terminated() && fp.a->mailbox_size() > resume_at && now - fp.since < max_pause) {
      ++it;
      continue;
    }
    for (auto cid : fp.conns) {
      auto ct = conns_.find(cid);
      if (ct == conns_.end() || !ct->second->ready) continue;
      put_record(*ct->second, [&](writer& w) { wire::put_flow(w, wire::rec::resume, it->first); });
      flush(*ct->second);
    }
    if (last_pause_ && last_pause_id_ == it->first) last_pause_ = false;
    it = pausing_.erase(it);
  }
}

// The last resort: what was in flight when a pause left (ZeroMQ's queues
// and the TCP buffers between the nodes: thousands of small messages) can
// still pile up. Past 4 x the soft limit this thread stops reading for a
// moment (at most max_pause), so that the rest stays in those queues, as
// the memory bound says; the peers' silence meanwhile is forgiven.
bool node_core::flooded() {
  if (!flooded_) return false;
  const auto now = clock::now();
  if (!flooded_->terminated() && flooded_->mailbox_size() > 2 * sys_.mailbox_soft_limit() &&
      now - flooded_since_ < max_pause)
    return true;
  for (auto& [id, c] : conns_) c->liveness->forgive(now - flooded_since_);
  flooded_ = actor{};
  return false;
}

void node_core::on_flow(connection& c, wire::rec kind, std::uint64_t id) {
  if (kind == wire::rec::pause) {
    c.paused_rids.insert(id);
    return;
  }
  if (c.paused_rids.erase(id) == 0) return;
  auto keep = c.held.begin();
  for (auto* p : c.held) {
    if (p->rid() == id) ready_.push_back(p);  // its reference goes with it
    else *keep++ = p;
  }
  c.held.erase(keep, c.held.end());
}

void node_core::on_monitor(connection& c, std::uint64_t id) {
  auto it = exports_.find(id);
  if (it == exports_.end()) {
    send_down(c, id, error{errc::actor_exited, "not exported by this node (ended, or never published)"});
    return;
  }
  if (!reachable(it->second, c)) {
    refuse(c, st_.refused_actors, "a monitor of local actor " + std::to_string(id) + " (not handed to it)");
    send_down(c, id, error{errc::actor_exited, "not reachable from this peer (untrusted peers)"});
    return;
  }
  if (!it->second.monitored) {
    it->second.monitored = true;
    it->second.a->add_monitor(sink_);
  }
}

bool node_core::reachable(const export_entry& e, const connection& c) const {
  return !cfg_.untrusted_peers || e.holders.find(c.id) != e.holders.end();
}

void node_core::refuse(connection& c, std::atomic<std::uint64_t>& counter, const std::string& what) {
  counter.fetch_add(1, std::memory_order_relaxed);
  if (c.told_refusal) return;
  c.told_refusal = true;
  log("refused " + what + " from " + c.describe() +
      " (untrusted_peers; further refusals from this peer are counted in stats(), not logged)");
}

void node_core::on_down(connection& c, const wire::down& d) {
  actor h;
  {
    std::lock_guard<std::mutex> g{proxies_mtx_};
    auto it = proxies_.find({c.id, d.id});
    if (it != proxies_.end()) h = it->second->try_handle();
  }
  if (h) static_cast<proxy*>(h.get())->end(d.reason);
}

void node_core::on_release(connection& c, const wire::release& x) {
  auto it = exports_.find(x.id);
  if (it == exports_.end()) return;
  auto h = it->second.holders.find(c.id);
  if (h == it->second.holders.end()) return;
  h->second = x.count >= h->second ? 0 : h->second - x.count;
  if (h->second == 0) {
    it->second.holders.erase(h);
    if (c.last_sender == it->second.a.get()) c.last_sender = nullptr;
  }
  if (it->second.holders.empty()) drop_export(it);
}

void node_core::drop_export(std::unordered_map<std::uint64_t, export_entry>::iterator it) {
  if (last_dest_ == &it->second) last_dest_ = nullptr, last_dest_id_ = 0;
  if (it->second.monitored) it->second.a->remove_monitor(sink_);
  for (auto& [id, c] : conns_)
    if (c->last_sender == it->second.a.get()) c->last_sender = nullptr;
  exports_.erase(it);
  st_.exports.store(exports_.size(), std::memory_order_relaxed);
}

void node_core::send_down(connection& c, std::uint64_t id, const error& reason) {
  put_record(c, [&](writer& w) { wire::put_down(w, wire::down{.id = id, .reason = reason}); });
}

void node_core::send_release(std::uint64_t cid, std::uint64_t id, std::uint64_t n) {
  auto it = conns_.find(cid);
  if (it == conns_.end() || !it->second->ready) return;
  put_record(*it->second, [&](writer& w) { wire::put_release(w, wire::release{.id = id, .count = n}); });
}

}  // namespace troupe::net::detail
