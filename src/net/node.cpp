// The node: one I/O thread that owns every ZeroMQ socket of the node, the
// proxies (actor cells whose mailbox that thread drains onto the network),
// the table of exported actors, and the connections.
//
// Wire format. Every ZeroMQ message is one frame: a 32-byte header (magic
// "TRP1", version, source incarnation, destination incarnation, sequence
// number per connection and direction) followed by records, each a 32-bit
// length and a body whose first byte is its kind. Records are batched per
// connection up to node_config::batch_bytes, so small messages share frames.
// Actor references are (incarnation of the node that runs the actor, its id
// there). A node exports a local actor when a reference to it is written,
// counting how often per connection; the peer's proxy counts how often it
// read it and gives the count back when it is freed (release), so an export
// dies only when no reference to it is in flight (no race between a release
// and a new reference).
#include "troupe/net/node.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <zmq.hpp>

#include "troupe/detail/actor_cell.hpp"
#include "troupe/detail/system_access.hpp"

namespace troupe::net {
namespace detail {

namespace {

constexpr std::uint32_t frame_magic = 0x31505254;  // "TRP1"
constexpr std::uint8_t wire_version = 1;
constexpr std::size_t header_bytes = 32;

enum class rec : std::uint8_t {
  hello = 1,     // u32 version, string name, u32 n, n x u64 type hashes
  welcome,       // the same, answering a hello
  lookup,        // u64 token, string name, u64 interface hash
  lookup_reply,  // u64 token, u8 status, actor ref, string detail
  data,          // u8 flags, u32 tag, u64 dest, actor ref sender, u64 id, u64 type hash, values
  monitor,       // u64 id: tell me when it ends
  down,          // u64 id, error
  release,       // u64 id, u64 count
  bye,           // the peer closes its node
  types,         // u32 n, n x u64 type hashes: registered since the handshake
};
constexpr std::uint8_t flag_urgent = 1;
enum : std::uint8_t { lookup_ok = 0, lookup_unknown = 1, lookup_mismatch = 2 };

using clock = std::chrono::steady_clock;

std::string hex(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

class node_core;

/// Frame buffers that ZeroMQ sends without copying them (zmq_msg_init_data)
/// and gives back when it is done, from its own I/O thread. Without them a
/// frame costs ZeroMQ a malloc and a copy of every byte, and the malloc'd
/// memory keeps going back to the kernel and coming in again: measured on
/// remote_pipeline, 98 k page faults per 20 M tuples (480 MB) in the sending
/// node's I/O thread and ZeroMQ's, 40% of them in that copy. A pooled buffer
/// keeps its pages.
class frame_pool : public std::enable_shared_from_this<frame_pool> {
 public:
  /// Keeps at most `keep` buffers, of at least `reserve` bytes (and at most
  /// 4 x `reserve`: a buffer grown by a huge frame is freed, not kept).
  frame_pool(std::size_t keep, std::size_t reserve) : keep_{keep}, reserve_{reserve} { free_.reserve(keep); }
  frame_pool(const frame_pool&) = delete;
  frame_pool& operator=(const frame_pool&) = delete;
  ~frame_pool() {
    for (auto* b : free_) delete b;
  }

  /// A message that owns the bytes of `frame`; `frame` is left empty, with
  /// the storage of a buffer given back earlier (or room reserved).
  zmq::message_t wrap(std::string& frame) {
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

 private:
  struct buffer {
    std::string bytes;
    std::shared_ptr<frame_pool> home;  // alive until ZeroMQ gives the last buffer back
  };
  static void give_back(void* /*data*/, void* hint) noexcept {
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

  std::mutex mtx_;
  std::vector<buffer*> free_;
  std::size_t keep_, reserve_;
};

/// Hash of a (connection or actor id, id) pair: the keys of the proxy table
/// and of the requests in flight.
struct pair_hash {
  std::size_t operator()(const std::pair<std::uint64_t, std::uint64_t>& k) const noexcept {
    return std::hash<std::uint64_t>{}(k.first * 0x9e3779b97f4a7c15ULL ^ k.second);
  }
};

/// A remote actor, as seen on this node. Its mailbox is drained by the
/// node's I/O thread, which writes each message to the connection.
class proxy final : public actor_cell {
 public:
  proxy(actor_system& sys, std::shared_ptr<node_core> core, std::uint64_t conn, std::uint64_t rid, bool sink)
      : actor_cell{sys}, core_{std::move(core)}, conn_{conn}, rid_{rid}, sink_{sink} {
    drop_spawn_token();
  }
  troupe::detail::resume_result resume(std::size_t) override { return troupe::detail::resume_result::done; }

  // The I/O thread is this mailbox's only consumer.
  troupe::detail::message_node* take() noexcept { return pop(); }
  std::size_t settle_taken(std::size_t n) noexcept {
    bool freed = false;
    return settle(n, freed);
  }
  void end(const error& reason) noexcept { terminate(reason, 0); }

  std::uint64_t conn() const noexcept { return conn_; }
  std::uint64_t rid() const noexcept { return rid_; }
  bool is_sink() const noexcept { return sink_; }
  std::uint64_t decoded = 0;  // references read (I/O thread; given back on exit)

 protected:
  void wake() noexcept override;
  void on_exit() noexcept override;

 private:
  std::shared_ptr<node_core> core_;
  std::uint64_t conn_;
  std::uint64_t rid_;
  bool sink_;
};

struct connection {
  std::uint64_t id = 0;
  bool outgoing = false;
  std::unique_ptr<zmq::socket_t> dealer;  // outgoing connections
  std::string routing_id;                 // incoming ones (the ROUTER's peer)
  std::string endpoint;
  std::uint64_t peer_inc = 0;
  std::string peer_name;
  bool ready = false;  // handshake done
  std::unordered_set<std::uint64_t> peer_types;
  std::uint64_t last_known_hash = 0;  // the last type found in peer_types
  std::size_t announced = 0;          // our types the peer was told of (registered_count() numbering)
  std::size_t handshake_types = 0;    // our types when we sent our handshake
  clock::time_point last_heard = clock::now();
  clock::time_point last_sent = clock::now();
  std::uint64_t seq_out = 0, seq_in = 0;
  std::string out;              // the batch being filled
  zmq::message_t stuck;         // a whole frame ZeroMQ did not take yet (queue full)
  std::vector<proxy*> blocked;  // proxies waiting for room (a reference each)
  /// Requests sent through this connection and not answered yet.
  std::unordered_map<std::pair<std::uint64_t, std::uint64_t>, actor, pair_hash> requests;
  std::vector<std::uint64_t> waiting_lookups;  // sent once ready
  // Decoding cache: the proxy of the last remote actor read on this
  // connection (it keeps that proxy alive until another one replaces it).
  std::uint64_t last_from_rid = 0;
  actor last_from;
  // Encoding cache: the last local sender written on this connection.
  actor_cell* last_sender = nullptr;
  std::uint64_t* last_sender_count = nullptr;

  bool has_stuck() const noexcept { return stuck.size() != 0; }

  std::string describe() const {
    std::string s = peer_name.empty() ? std::string{"node"} : "node '" + peer_name + "'";
    if (!endpoint.empty()) s += " at " + endpoint;
    if (peer_inc != 0) s += " (incarnation " + hex(peer_inc) + ")";
    return s;
  }
};

/// What a lookup ends with: a handle, or why there is none.
struct lookup_result {
  actor a;
  std::string error;
};

class node_core final : public handle_context,
                        public troupe::detail::shutdown_client,
                        public std::enable_shared_from_this<node_core> {
 public:
  node_core(actor_system& sys, node_config cfg) : sys_{sys}, cfg_{std::move(cfg)} {
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
      std::fprintf(stderr, "troupe::net: node '%s' runs WITHOUT encryption or authentication (security::plaintext)\n",
                   cfg_.name.c_str());
    }
    if (cfg_.heartbeat_interval.count() <= 0 || cfg_.heartbeat_timeout <= cfg_.heartbeat_interval)
      throw net_error("troupe::net: node_config needs 0 < heartbeat_interval < heartbeat_timeout");
    if (cfg_.queue_frames <= 0 || cfg_.batch_bytes < 256)
      throw net_error("troupe::net: node_config needs queue_frames > 0 and batch_bytes >= 256");
    efd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd_ < 0) throw net_error("troupe::net: eventfd failed");
  }

  ~node_core() {
    if (efd_ >= 0) ::close(efd_);
  }

  void start() {
    if (cfg_.security == security::curve) {
      zap_ = std::make_unique<zmq::socket_t>(ctx_, zmq::socket_type::router);
      zap_->set(zmq::sockopt::linger, 0);
      zap_->bind("inproc://zeromq.zap.01");
    }
    sink_ = actor{new proxy{sys_, shared_from_this(), 0, 0, true}, false};
    if (!troupe::detail::system_access::register_client(sys_, this))
      throw net_error("troupe::net: the actor system is shutting down");
    io_ = std::thread{[this] { run(); }};
  }

  // --- any thread ---
  void post(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> g{in_mtx_};
      commands_.push_back(std::move(f));
    }
    poke();
  }
  template <class R>
  R call(std::function<R()> f) {
    if (stopping_.load()) throw net_error("troupe::net: the node is closed");
    auto task = std::make_shared<std::packaged_task<R()>>(std::move(f));
    auto fut = task->get_future();
    post([task] { (*task)(); });
    return fut.get();
  }
  void ready(proxy* p) noexcept {
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
  void proxy_gone(proxy* p) noexcept {
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

  void close() {
    stopping_.store(true);
    poke();
    join_io();
    troupe::detail::system_access::unregister_client(sys_, this);
  }
  void cancel_for_shutdown() noexcept override {
    // The actor system stops while the node is still open: end the I/O
    // thread on a thread of its own (the system holds its clients' lock now,
    // and unregistering takes it).
    stopping_.store(true);
    poke();
    if (cancelled_.exchange(true)) return;
    try {
      std::thread{[self = shared_from_this()] {
        self->join_io();
        troupe::detail::system_access::unregister_client(self->sys_, self.get());
      }}.detach();
    } catch (...) {
      std::fprintf(stderr, "troupe::net: could not start a thread to close the node at shutdown\n");
    }
  }
  void join_io() {
    std::call_once(joined_, [this] {
      if (io_.joinable()) io_.join();
    });
  }

  void feed(const std::string& peer, const std::vector<std::string>& frames) {
    call<int>([&] {
      for (auto& f : frames) {
        auto it = by_routing_.find(peer);
        handle_frame(it != by_routing_.end() ? it->second : nullptr, &peer, f.data(), f.size());
      }
      return 0;
    });
  }

  std::uint64_t incarnation() const noexcept { return inc_; }
  node_stats stats() const {
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
    s.peers = st_.peers.load();
    s.exports = st_.exports.load();
    std::lock_guard<std::mutex> g{proxies_mtx_};
    s.proxies = proxies_.size();
    return s;
  }

  std::string listen(const std::string& endpoint) {
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
      return router_->get(zmq::sockopt::last_endpoint);
    });
  }

  void publish(const actor& a, const std::string& name, std::uint64_t iface) {
    if (!a) throw net_error("troupe::net: publish: the handle is empty");
    call<int>([this, a, name, iface] {
      published_[name] = published{a, iface};
      return 0;
    });
  }

  actor lookup(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout,
               std::uint64_t iface) {
    if (cfg_.security == security::curve && !is_z85_key(where.public_key))
      throw net_error("troupe::net: remote_actor('" + where.endpoint +
                      "'): the node's public key is missing or not a Z85 CURVE key (40 characters)");
    auto p = std::make_shared<std::promise<lookup_result>>();
    auto fut = p->get_future();
    call<int>([this, where, name, timeout, iface, p] {
      start_lookup(where, name, timeout, iface, p);
      return 0;
    });
    if (fut.wait_for(timeout + std::chrono::seconds{5}) != std::future_status::ready)
      throw net_error("troupe::net: remote_actor('" + where.endpoint + "'): the node's I/O thread did not answer");
    auto r = fut.get();
    if (!r.error.empty()) throw net_error(r.error);
    return std::move(r.a);
  }

  // --- handle_context (I/O thread, while a record is written or read) ---
  void write_actor(writer& w, const actor& a) override {
    if (!a) {
      w.raw(std::uint64_t{0});
      w.raw(std::uint64_t{0});
      return;
    }
    auto& c = *cur_;
    if (a.get() == c.last_sender) {
      ++*c.last_sender_count;
      w.raw(inc_);
      w.raw(a.id());
      return;
    }
    if (auto* p = dynamic_cast<proxy*>(a.get()); p != nullptr && !p->is_sink()) {
      auto it = conns_.find(p->conn());
      w.raw(it != conns_.end() ? it->second->peer_inc : std::uint64_t{0});
      w.raw(p->rid());
      return;
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
    w.raw(inc_);
    w.raw(a.id());
  }

  actor read_actor(reader& r) override {
    auto origin = r.raw<std::uint64_t>("actor reference");
    auto id = r.raw<std::uint64_t>("actor reference");
    if (id == 0) return actor{};
    if (origin == inc_) {
      auto it = exports_.find(id);
      if (it == exports_.end()) {
        st_.unknown_actors.fetch_add(1, std::memory_order_relaxed);
        return actor{};
      }
      return it->second.a;
    }
    connection* c = cur_;
    if (origin != c->peer_inc) {
      auto it = by_inc_.find(origin);
      if (it == by_inc_.end()) return actor{};  // a third node this one is not connected to
      c = it->second;
    }
    return proxy_for(*c, id);
  }

 private:
  struct published {
    actor a;
    std::uint64_t iface = 0;
  };
  struct export_entry {
    actor a;
    std::unordered_map<std::uint64_t, std::uint64_t> holders;  // connection -> references written
    bool monitored = false;
  };
  struct pending_lookup {
    std::shared_ptr<std::promise<lookup_result>> p;
    std::uint64_t conn;
    std::string name;
    std::uint64_t iface;
    clock::time_point deadline;
    std::string endpoint;
    std::chrono::milliseconds timeout;
  };
  struct counters {
    std::atomic<std::uint64_t> frames_in{0}, frames_out{0}, messages_in{0}, messages_out{0}, malformed{0},
        unknown_types{0}, unsendable{0}, unknown_actors{0}, stale{0}, rejected_keys{0}, peers_lost{0};
    std::atomic<std::size_t> peers{0}, exports{0};
  };

  void poke() noexcept {
    if (sleeping_.exchange(false)) {
      std::uint64_t one = 1;
      [[maybe_unused]] auto n = ::write(efd_, &one, sizeof one);
    }
  }

  void tune(zmq::socket_t& s) {
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::sndhwm, cfg_.queue_frames);
    s.set(zmq::sockopt::rcvhwm, cfg_.queue_frames);
    s.set(zmq::sockopt::maxmsgsize, cfg_.max_frame_bytes);
  }

  // ------------------------------------------------------------ I/O loop
  void run() {
    std::vector<zmq::pollitem_t> items;
    std::vector<connection*> item_conn;
    while (!stopping_.load()) {
      run_inputs();
      drain_ready();
      for (auto& [id, c] : conns_) flush(*c);
      timers();
      items.clear();
      item_conn.clear();
      items.push_back({nullptr, efd_, ZMQ_POLLIN, 0});
      item_conn.push_back(nullptr);
      if (zap_) {
        items.push_back({zap_->handle(), 0, ZMQ_POLLIN, 0});
        item_conn.push_back(nullptr);
      }
      const bool reading = !paused();
      if (reading) {
        if (router_) {
          items.push_back({router_->handle(), 0, ZMQ_POLLIN, 0});
          item_conn.push_back(nullptr);
        }
        for (auto& [id, c] : conns_)
          if (c->dealer) {
            items.push_back({c->dealer->handle(), 0, ZMQ_POLLIN, 0});
            item_conn.push_back(c.get());
          }
      }
      long timeout = busy() ? 0 : (paused() || any_stuck()) ? 1 : poll_ms();
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
        zmq::poll(items.data(), items.size(), std::chrono::milliseconds{timeout});
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) std::fprintf(stderr, "troupe::net: poll: %s\n", e.what());
      }
      sleeping_.store(false);
      if (items[0].revents & ZMQ_POLLIN) {
        std::uint64_t v;
        [[maybe_unused]] auto n = ::read(efd_, &v, sizeof v);
      }
      std::size_t i = 1;
      if (zap_) {
        if (items[i].revents & ZMQ_POLLIN) handle_zap();
        ++i;
      }
      if (!reading) continue;
      if (router_) {
        if (items[i].revents & ZMQ_POLLIN) read_router();
        ++i;
      }
      for (; i < items.size(); ++i)
        if (items[i].revents & ZMQ_POLLIN) read_dealer(item_conn[i]->id);
    }
    shutdown_io();
  }

  bool busy() const noexcept { return !ready_.empty(); }
  bool any_stuck() const noexcept {
    for (auto& [id, c] : conns_)
      if (c->has_stuck()) return true;
    return false;
  }
  long poll_ms() const noexcept {
    long ms = static_cast<long>(cfg_.heartbeat_interval.count()) / 2;
    if (!lookups_.empty()) ms = std::min(ms, 20L);
    return std::max(ms, 1L);
  }

  void run_inputs() {
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

  // Drains the proxies that have mail onto their connections.
  void drain_ready() {
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
      }
      std::size_t taken = 0;
      bool room = true;
      while (taken < 4096 && room) {
        auto* n = p->take();
        if (n == nullptr) break;
        ++taken;
        if (p->is_sink()) handle_sink(n);
        else room = forward(*c, *p, n);
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

  // One message from a proxy's mailbox to the wire. Returns false when the
  // connection's queue is full (stop draining it).
  bool forward(connection& c, proxy& p, troupe::detail::message_node* n) {
    std::unique_ptr<troupe::detail::message_node, troupe::detail::message_deleter> guard{n};
    const message_type* t = (n->vt->type_id == last_type_id_) ? last_type_ : find_message(n->vt->type_id);
    if (t == nullptr) {
      st_.unsendable.fetch_add(1, std::memory_order_relaxed);
      fail_message(*n, error{errc::runtime_error, std::string{"troupe::net: the message type "} + n->vt->type_name() +
                                                      " is not registered (troupe::net::add_message)"});
      return true;
    }
    last_type_id_ = n->vt->type_id;
    last_type_ = t;
    if (!c.ready) {
      fail_message(*n, error{errc::remote_unreachable, "troupe::net: " + c.describe() + " is not connected"});
      return true;
    }
    // A type the peer did not list fails here, at once, unless it was
    // registered after this connection's handshake: the peer may have
    // registered it too and not told us yet (its announcement comes with its
    // next record); it is sent, and a peer without it counts it as unknown.
    if (t->hash != c.last_known_hash && c.peer_types.find(t->hash) == c.peer_types.end() &&
        t->index < c.handshake_types) {
      st_.unsendable.fetch_add(1, std::memory_order_relaxed);
      fail_message(*n, error{errc::runtime_error,
                             "troupe::net: " + c.describe() + " has no message type '" + t->name + "' registered"});
      return true;
    }
    c.last_known_hash = t->hash;
    const std::size_t at = begin_record(c);
    try {
      writer w{c.out, this};
      cur_ = &c;
      w.raw(static_cast<std::uint8_t>(rec::data));
      w.raw(static_cast<std::uint8_t>(n->vt->system ? flag_urgent : 0));
      w.raw(n->tag);
      w.raw(p.rid());
      write_actor(w, n->sender);
      w.raw(n->id);
      w.raw(t->hash);
      t->encode(w, *n);
    } catch (const std::exception& e) {
      c.out.resize(at);
      if (c.out.size() == header_bytes) c.out.clear(), --c.seq_out;
      st_.unsendable.fetch_add(1, std::memory_order_relaxed);
      fail_message(*n,
                   error{errc::runtime_error, std::string{"troupe::net: cannot write "} + t->name + ": " + e.what()});
      return true;
    }
    end_record(c, at);
    st_.messages_out.fetch_add(1, std::memory_order_relaxed);
    if (n->is_request() && n->sender) c.requests.emplace(std::make_pair(n->sender.id(), n->id), n->sender);
    if (c.out.size() >= cfg_.batch_bytes) flush(c);
    return !c.has_stuck();
  }

  /// A message that cannot go: a dead letter; a request gets `e` back.
  void fail_message(troupe::detail::message_node& n, const error& e) {
    troupe::detail::system_access::count_dead_letter(sys_);
    if (n.is_request() && n.sender)
      actor_cell::deliver(n.sender, troupe::detail::make_message(actor{}, troupe::detail::response_bit | n.id, e));
  }

  // The sink monitors exported actors: tell every holder when one ends.
  void handle_sink(troupe::detail::message_node* n) {
    std::unique_ptr<troupe::detail::message_node, troupe::detail::message_deleter> guard{n};
    if (!n->holds<down_msg>()) return;
    auto& d = std::get<0>(troupe::detail::values_of<down_msg>(*n));
    auto it = exports_.find(d.source.id());
    if (it == exports_.end()) return;
    for (auto& [cid, count] : it->second.holders) {
      auto ct = conns_.find(cid);
      if (ct != conns_.end()) send_down(*ct->second, d.source.id(), d.reason);
    }
  }

  // ------------------------------------------------------------ frames
  /// Opens a record in c's batch. Types registered since the peer was last
  /// told go first (a record of their own): whatever this record makes the
  /// peer send back, the peer knows our types as of now.
  std::size_t begin_record(connection& c, bool announce = true) {
    if (c.out.empty()) {
      writer w{c.out, nullptr};
      w.raw(frame_magic);
      w.raw(wire_version);
      w.raw(std::uint8_t{0});
      w.raw(std::uint16_t{0});
      w.raw(inc_);
      w.raw(c.peer_inc);
      w.raw(c.seq_out++);
    }
    if (announce && c.ready) announce_types(c);
    const std::size_t at = c.out.size();
    c.out.append(4, '\0');
    return at;
  }
  void announce_types(connection& c) {
    const std::size_t n = registered_count();
    if (n == c.announced) return;
    const auto hashes = registered_hashes(c.announced, n);
    c.announced = n;
    const std::size_t at = c.out.size();
    c.out.append(4, '\0');
    writer w{c.out, nullptr};
    w.raw(static_cast<std::uint8_t>(rec::types));
    w.raw(static_cast<std::uint32_t>(hashes.size()));
    for (auto h : hashes) w.raw(h);
    end_record(c, at);
  }
  static void end_record(connection& c, std::size_t at) {
    auto len = static_cast<std::uint32_t>(c.out.size() - at - 4);
    std::memcpy(c.out.data() + at, &len, sizeof len);
  }
  template <class F>
  void put_record(connection& c, F&& body, bool announce = true) {
    const std::size_t at = begin_record(c, announce);
    writer w{c.out, this};
    cur_ = &c;
    body(w);
    end_record(c, at);
    if (c.out.size() >= cfg_.batch_bytes) flush(c);
  }

  /// Sends `frame` (emptied when sent); false: ZeroMQ's queue is full.
  bool send_frame(connection& c, zmq::message_t& frame) {
    try {
      if (c.dealer) {
        if (!c.dealer->send(frame, zmq::send_flags::dontwait)) return false;
      } else {
        if (!router_) return true;  // nothing to send through any more
        if (!router_->send(zmq::buffer(c.routing_id), zmq::send_flags::dontwait | zmq::send_flags::sndmore))
          return false;
        router_->send(frame, zmq::send_flags::dontwait);
      }
    } catch (const zmq::error_t&) {
      return true;  // the peer's connection is gone: the heartbeat timeout reports it
    }
    st_.frames_out.fetch_add(1, std::memory_order_relaxed);
    c.last_sent = clock::now();
    last_activity_ = c.last_sent;
    return true;
  }

  void flush(connection& c) {
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

  void heartbeat(connection& c) {
    begin_record(c);  // an empty record of length 0 would be malformed: drop it again
    c.out.resize(c.out.size() - 4);
    flush(c);
  }

  // ------------------------------------------------------------ reading
  // Reading stops after a few frames or milliseconds, so that the loop
  // comes back to sending (heartbeats, monitors, releases) and to the timers.
  bool read_budget_left(int frames, clock::time_point since) const {
    return frames < 16 && clock::now() - since < std::chrono::milliseconds{2};
  }

  void read_router() {
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
      if (paused()) return;
    }
  }

  void read_dealer(std::uint64_t cid) {
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
      if (paused()) return;
    }
  }

 public:
  /// One frame from a peer: `c` is its connection, or null for a frame from
  /// a new ROUTER peer (`rid`), which must be a hello. Public for the
  /// decoder's fuzz test.
  void handle_frame(connection* c, const std::string* rid, const char* data, std::size_t size) {
    st_.frames_in.fetch_add(1, std::memory_order_relaxed);
    reader r{data, data + size, this};
    std::uint64_t src = 0, dst = 0, seq = 0;
    try {
      if (r.raw<std::uint32_t>("frame header") != frame_magic) throw decode_error("not a troupe frame (bad magic)");
      if (r.raw<std::uint8_t>("frame header") != wire_version) throw decode_error("unknown wire version");
      (void)r.raw<std::uint8_t>("frame header");
      (void)r.raw<std::uint16_t>("frame header");
      src = r.raw<std::uint64_t>("frame header");
      dst = r.raw<std::uint64_t>("frame header");
      seq = r.raw<std::uint64_t>("frame header");
    } catch (const decode_error&) {
      st_.malformed.fetch_add(1, std::memory_order_relaxed);
      return;
    }
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
    while (r.left() > 0) {
      std::size_t len = 0;
      const char* body = nullptr;
      try {
        len = r.raw<std::uint32_t>("record length");
        body = r.take(len, "record");
      } catch (const decode_error&) {
        st_.malformed.fetch_add(1, std::memory_order_relaxed);
        return;  // the rest of the frame cannot be delimited
      }
      try {
        handle_record(*c, body, len, src);
      } catch (const decode_error&) {
        st_.malformed.fetch_add(1, std::memory_order_relaxed);
      } catch (const std::exception&) {
        st_.malformed.fetch_add(1, std::memory_order_relaxed);
      }
      if (conns_.find(cid) == conns_.end()) return;  // the record ended the connection
    }
  }

 private:
  void handle_record(connection& c, const char* body, std::size_t len, std::uint64_t src) {
    reader r{body, body + len, this};
    cur_ = &c;
    auto kind = static_cast<rec>(r.raw<std::uint8_t>("record kind"));
    if (!c.ready && kind != rec::hello && kind != rec::welcome) throw decode_error("a record before the handshake");
    switch (kind) {
      case rec::hello:
      case rec::welcome: {
        if ((kind == rec::hello) == c.outgoing) throw decode_error("handshake in the wrong direction");
        if (c.ready) throw decode_error("a second handshake");
        if (r.raw<std::uint32_t>("handshake") != wire_version) throw decode_error("handshake: other wire version");
        std::string name;
        codec<std::string>::read(r, name);
        auto n = r.count(8, "handshake types");
        std::unordered_set<std::uint64_t> types;
        for (std::size_t i = 0; i < n; ++i) types.insert(r.raw<std::uint64_t>("handshake types"));
        r.expect_end("handshake");
        c.peer_types = std::move(types);
        c.peer_name = std::move(name);
        c.peer_inc = src;
        c.ready = true;
        if (by_inc_.find(src) == by_inc_.end()) by_inc_[src] = &c;
        st_.peers.store(conns_.size(), std::memory_order_relaxed);
        if (kind == rec::hello) send_handshake(c, rec::welcome);
        for (auto token : std::exchange(c.waiting_lookups, {})) send_lookup(c, token);
        return;
      }
      case rec::types: {
        auto n = r.count(8, "types");
        for (std::size_t i = 0; i < n; ++i) c.peer_types.insert(r.raw<std::uint64_t>("types"));
        r.expect_end("types");
        return;
      }
      case rec::lookup: {
        auto token = r.raw<std::uint64_t>("lookup");
        std::string name;
        codec<std::string>::read(r, name);
        auto iface = r.raw<std::uint64_t>("lookup");
        r.expect_end("lookup");
        auto it = published_.find(name);
        std::uint8_t status = lookup_ok;
        std::string detail;
        actor a;
        if (it == published_.end()) {
          status = lookup_unknown;
          detail = "no actor is published as '" + name + "' there";
        } else if (iface != 0 && it->second.iface != iface) {
          status = lookup_mismatch;
          detail = "the actor published as '" + name + "' has another interface";
        } else {
          a = it->second.a;
        }
        put_record(c, [&](writer& w) {
          w.raw(static_cast<std::uint8_t>(rec::lookup_reply));
          w.raw(token);
          w.raw(status);
          write_actor(w, a);
          codec<std::string>::write(w, detail);
        });
        return;
      }
      case rec::lookup_reply: {
        auto token = r.raw<std::uint64_t>("lookup reply");
        auto status = r.raw<std::uint8_t>("lookup reply");
        actor a = read_actor(r);
        std::string detail;
        codec<std::string>::read(r, detail);
        auto it = lookups_.find(token);
        if (it == lookups_.end()) return;  // timed out meanwhile
        auto l = std::move(it->second);
        lookups_.erase(it);
        if (status == lookup_ok && a) l.p->set_value(lookup_result{std::move(a), {}});
        else
          l.p->set_value(
              lookup_result{{}, "troupe::net: remote_actor('" + l.endpoint + "', '" + l.name + "'): " + detail});
        return;
      }
      case rec::data:
        handle_data(c, r);
        return;
      case rec::monitor: {
        auto id = r.raw<std::uint64_t>("monitor");
        r.expect_end("monitor");
        auto it = exports_.find(id);
        if (it == exports_.end()) {
          send_down(c, id, error{errc::actor_exited, "not exported by this node (ended, or never published)"});
          return;
        }
        if (!it->second.monitored) {
          it->second.monitored = true;
          it->second.a->add_monitor(sink_);
        }
        return;
      }
      case rec::down: {
        auto id = r.raw<std::uint64_t>("down");
        error reason;
        codec<error>::read(r, reason);
        r.expect_end("down");
        proxy* p = nullptr;
        {
          std::lock_guard<std::mutex> g{proxies_mtx_};
          auto it = proxies_.find({c.id, id});
          if (it != proxies_.end() && it->second->try_add_ref()) p = it->second;
        }
        if (p != nullptr) {
          p->end(reason);
          p->release();
        }
        return;
      }
      case rec::bye:
        r.expect_end("bye");
        lose(c, "the node was closed", false);
        return;
      case rec::release: {
        auto id = r.raw<std::uint64_t>("release");
        auto n = r.raw<std::uint64_t>("release");
        r.expect_end("release");
        auto it = exports_.find(id);
        if (it == exports_.end()) return;
        auto h = it->second.holders.find(c.id);
        if (h == it->second.holders.end()) return;
        h->second = n >= h->second ? 0 : h->second - n;
        if (h->second == 0) {
          it->second.holders.erase(h);
          if (c.last_sender == it->second.a.get()) c.last_sender = nullptr;
        }
        if (it->second.holders.empty()) drop_export(it);
        return;
      }
    }
    throw decode_error("unknown record kind " + std::to_string(static_cast<int>(kind)));
  }

  void handle_data(connection& c, reader& r) {
    auto flags = r.raw<std::uint8_t>("data");
    auto tag = r.raw<std::uint32_t>("data");
    auto dest = r.raw<std::uint64_t>("data");
    actor sender = read_actor(r);
    auto id = r.raw<std::uint64_t>("data");
    auto hash = r.raw<std::uint64_t>("data");
    if ((id & troupe::detail::response_bit) != 0) c.requests.erase({dest, id & ~troupe::detail::response_bit});
    const bool is_request = id != 0 && (id & troupe::detail::response_bit) == 0;
    const message_type* t = hash == last_hash_ ? last_hash_type_ : find_message(hash);
    if (t != nullptr) {
      last_hash_ = hash;
      last_hash_type_ = t;
    }
    if (t == nullptr) {
      st_.unknown_types.fetch_add(1, std::memory_order_relaxed);
      if (is_request && sender)
        actor_cell::deliver(sender, troupe::detail::make_message(actor{}, troupe::detail::response_bit | id,
                                                                 error{errc::runtime_error,
                                                                       "troupe::net: the receiving node has no message "
                                                                       "type with this name registered"}));
      return;
    }
    export_entry* entry = dest == last_dest_id_ ? last_dest_ : nullptr;
    if (entry == nullptr) {
      if (auto it = exports_.find(dest); it != exports_.end()) {
        entry = &it->second;
        last_dest_id_ = dest;
        last_dest_ = entry;
      }
    }
    if (entry == nullptr) {
      st_.unknown_actors.fetch_add(1, std::memory_order_relaxed);
      troupe::detail::system_access::count_dead_letter(sys_);
      if (is_request && sender)
        actor_cell::deliver(sender,
                            troupe::detail::make_message(actor{}, troupe::detail::response_bit | id,
                                                         error{errc::actor_exited,
                                                               "troupe::net: the receiver is not exported by its "
                                                               "node (it ended, or was never published)"}));
      return;
    }
    auto* n = t->decode(r, std::move(sender), id);
    n->tag = tag;
    st_.messages_in.fetch_add(1, std::memory_order_relaxed);
    const actor& to = entry->a;
    actor_cell::deliver(to, n, (flags & flag_urgent) != 0 ? priority::urgent : priority::normal);
    if (to->mailbox_size() > sys_.mailbox_soft_limit() && !to->terminated()) {
      paused_on_ = to;
      paused_since_ = clock::now();
    }
  }

  // ------------------------------------------------------------ proxies
  actor proxy_for(connection& c, std::uint64_t rid) {
    if (rid == c.last_from_rid && c.last_from && !c.last_from->terminated()) {
      ++static_cast<proxy*>(c.last_from.get())->decoded;
      return c.last_from;
    }
    actor a = find_or_make_proxy(c, rid);
    c.last_from_rid = rid;
    c.last_from = a;
    return a;
  }

  actor find_or_make_proxy(connection& c, std::uint64_t rid) {
    {
      std::lock_guard<std::mutex> g{proxies_mtx_};
      auto it = proxies_.find({c.id, rid});
      if (it != proxies_.end() && it->second->try_add_ref()) {
        ++it->second->decoded;
        return actor{it->second, false};
      }
    }
    auto* p = new proxy{sys_, shared_from_this(), c.id, rid, false};
    p->decoded = 1;
    {
      std::lock_guard<std::mutex> g{proxies_mtx_};
      proxies_[{c.id, rid}] = p;
    }
    actor a{p, false};
    connection* keep = cur_;
    put_record(c, [&](writer& w) {
      w.raw(static_cast<std::uint8_t>(rec::monitor));
      w.raw(rid);
    });
    cur_ = keep;
    return a;
  }

  void drop_export(std::unordered_map<std::uint64_t, export_entry>::iterator it) {
    if (last_dest_ == &it->second) last_dest_ = nullptr, last_dest_id_ = 0;
    if (it->second.monitored) it->second.a->remove_monitor(sink_);
    for (auto& [id, c] : conns_)
      if (c->last_sender == it->second.a.get()) c->last_sender = nullptr;
    exports_.erase(it);
    st_.exports.store(exports_.size(), std::memory_order_relaxed);
  }

  void send_down(connection& c, std::uint64_t id, const error& reason) {
    put_record(c, [&](writer& w) {
      w.raw(static_cast<std::uint8_t>(rec::down));
      w.raw(id);
      codec<error>::write(w, reason);
    });
  }

  void send_release(std::uint64_t cid, std::uint64_t id, std::uint64_t n) {
    auto it = conns_.find(cid);
    if (it == conns_.end() || !it->second->ready) return;
    put_record(*it->second, [&](writer& w) {
      w.raw(static_cast<std::uint8_t>(rec::release));
      w.raw(id);
      w.raw(n);
    });
  }

  void send_handshake(connection& c, rec kind) {
    c.announced = registered_count();
    c.handshake_types = c.announced;
    put_record(
        c,
        [&](writer& w) {
          w.raw(static_cast<std::uint8_t>(kind));
          w.raw(static_cast<std::uint32_t>(wire_version));
          codec<std::string>::write(w, cfg_.name);
          auto hashes = registered_hashes(0, c.announced);
          w.raw(static_cast<std::uint32_t>(hashes.size()));
          for (auto h : hashes) w.raw(h);
        },
        false);  // the handshake is the first record: nothing before it
    flush(c);
  }

  // ------------------------------------------------------------ lookups
  void start_lookup(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout,
                    std::uint64_t iface, const std::shared_ptr<std::promise<lookup_result>>& p) {
    connection* c = nullptr;
    if (auto it = by_endpoint_.find(where.endpoint); it != by_endpoint_.end()) c = it->second;
    if (c == nullptr) {
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
        p->set_value(
            lookup_result{{}, ("troupe::net: remote_actor: bad endpoint '" + where.endpoint + "': " + e.what())});
        return;
      }
      c = conn.get();
      conns_[c->id] = std::move(conn);
      by_endpoint_[where.endpoint] = c;
      send_handshake(*c, rec::hello);
    }
    auto token = ++next_token_;
    lookups_[token] = pending_lookup{p, c->id, name, iface, clock::now() + timeout, where.endpoint, timeout};
    if (c->ready) send_lookup(*c, token);
    else c->waiting_lookups.push_back(token);
  }

  void send_lookup(connection& c, std::uint64_t token) {
    auto it = lookups_.find(token);
    if (it == lookups_.end()) return;
    put_record(c, [&](writer& w) {
      w.raw(static_cast<std::uint8_t>(rec::lookup));
      w.raw(token);
      codec<std::string>::write(w, it->second.name);
      w.raw(it->second.iface);
    });
  }

  // ------------------------------------------------------------ time
  bool paused() {
    if (!paused_on_) return false;
    const bool drained = paused_on_->terminated() || paused_on_->mailbox_size() <= sys_.mailbox_soft_limit() / 2;
    // Never longer than a fraction of the heartbeat timeout at a time: an
    // actor that waits for a response behind the pause must get it.
    if (drained || clock::now() - paused_since_ > cfg_.heartbeat_timeout / 4) {
      paused_on_ = actor{};
      const auto now = clock::now();
      for (auto& [id, c] : conns_) c->last_heard = std::max(c->last_heard, now - cfg_.heartbeat_interval);
      return false;
    }
    return true;
  }

  void timers() {
    const auto now = clock::now();
    std::vector<std::uint64_t> expired;
    for (auto& [token, l] : lookups_)
      if (now >= l.deadline) expired.push_back(token);
    for (auto token : expired) {
      auto l = std::move(lookups_[token]);
      lookups_.erase(token);
      auto ct = conns_.find(l.conn);
      const bool connected = ct != conns_.end() && ct->second->ready;
      l.p->set_value(lookup_result{
          {},
          ("troupe::net: remote_actor('" + l.endpoint + "', '" + l.name + "'): no answer within " +
           std::to_string(l.timeout.count()) + " ms" +
           (connected ? std::string{" (connected, but the lookup was not answered)"}
                      : std::string{" (no handshake: nobody listens there, or the keys do not match: the server key "
                                    "given here, or this node's key not trusted there)"}))});
      if (ct != conns_.end() && !ct->second->ready) {
        bool others = false;
        for (auto& [t2, l2] : lookups_) others = others || l2.conn == l.conn;
        if (!others) drop_connection(l.conn);
      }
    }
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
  /// The peer of `c` is gone (or must be treated so): its proxies end, its
  /// requests fail, its exports are dropped. Destroys `c`.
  void lose(connection& c, const std::string& why, bool report = true) {
    const std::uint64_t cid = c.id;
    const std::string what = "troupe::net: lost " + c.describe() + ": " + why;
    if (c.ready) {
      st_.peers_lost.fetch_add(1, std::memory_order_relaxed);
      dead_incs_.insert(c.peer_inc);
      if (report && !stopping_.load())
        std::fprintf(stderr, "troupe::net: node '%s': %s\n", cfg_.name.c_str(), what.c_str());
    }
    for (auto& [key, requester] : c.requests)
      actor_cell::deliver(requester, troupe::detail::make_message(actor{}, troupe::detail::response_bit | key.second,
                                                                  error{errc::remote_unreachable, what}));
    c.requests.clear();
    std::vector<proxy*> ending;
    {
      std::lock_guard<std::mutex> g{proxies_mtx_};
      for (auto& [key, p] : proxies_)
        if (key.first == cid && p->try_add_ref()) ending.push_back(p);
    }
    for (auto* p : ending) {
      p->end(error{errc::remote_unreachable, what});
      p->release();
    }
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

  void drop_connection(std::uint64_t cid) {
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

  void shutdown_io() {
    run_inputs();
    // Tell the peers (best effort: up to 200 ms for the last frames to leave).
    for (auto& [id, c] : conns_) {
      if (!c->ready) continue;
      put_record(*c, [](writer& w) { w.raw(static_cast<std::uint8_t>(rec::bye)); });
      flush(*c);
      if (c->dealer) c->dealer->set(zmq::sockopt::linger, 200);
    }
    if (router_) router_->set(zmq::sockopt::linger, 200);
    std::vector<std::uint64_t> ids;
    ids.reserve(conns_.size());
    for (auto& [id, c] : conns_) ids.push_back(id);
    for (auto id : ids)
      if (auto it = conns_.find(id); it != conns_.end()) lose(*it->second, "this node was closed");
    for (auto* p : ready_) p->release();
    ready_.clear();
    for (auto& [token, l] : lookups_) l.p->set_value(lookup_result{{}, "troupe::net: the node was closed"});
    lookups_.clear();
    for (auto it = exports_.begin(); it != exports_.end();) {
      auto next = std::next(it);
      drop_export(it);
      it = next;
    }
    published_.clear();
    if (sink_) {
      auto* s = static_cast<proxy*>(sink_.get());
      s->end(error{errc::remote_unreachable, "node closed"});
      sink_ = actor{};
    }
    paused_on_ = actor{};
    router_.reset();
    zap_.reset();
    // Proxies woken after this point are already closed (their enqueue
    // bounces); wake-ups still queued are dropped here.
    std::lock_guard<std::mutex> g{in_mtx_};
    for (auto* p : ready_in_) p->release();
    ready_in_.clear();
    commands_.clear();
  }

  // ZeroMQ's authentication protocol (ZAP, RFC 27): the key allow-list.
  void handle_zap() {
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
      std::fprintf(stderr, "troupe::net: node '%s': answering an authentication request failed: %s\n",
                   cfg_.name.c_str(), e.what());
    }
  }

  actor_system& sys_;
  node_config cfg_;
  std::uint64_t inc_ = 0;
  std::unordered_set<std::string> trusted_;
  zmq::context_t ctx_{1};
  std::unique_ptr<zmq::socket_t> router_;
  std::unique_ptr<zmq::socket_t> zap_;
  int efd_ = -1;
  std::thread io_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> cancelled_{false};
  std::once_flag joined_;
  actor sink_;
  counters st_;

  std::mutex in_mtx_;
  std::vector<proxy*> ready_in_;
  std::vector<std::function<void()>> commands_;

  mutable std::mutex proxies_mtx_;
  std::unordered_map<std::pair<std::uint64_t, std::uint64_t>, proxy*, pair_hash> proxies_;

  // I/O thread only.
  std::deque<proxy*> ready_;
  std::unordered_map<std::uint64_t, std::unique_ptr<connection>> conns_;
  std::unordered_map<std::string, connection*> by_routing_;
  std::unordered_map<std::string, connection*> by_endpoint_;
  std::unordered_map<std::uint64_t, connection*> by_inc_;
  std::unordered_set<std::uint64_t> dead_incs_;
  std::unordered_map<std::uint64_t, export_entry> exports_;
  std::unordered_map<std::string, published> published_;
  std::unordered_map<std::uint64_t, pending_lookup> lookups_;
  std::uint64_t next_conn_ = 0, next_token_ = 0;
  connection* cur_ = nullptr;
  const void* last_type_id_ = nullptr;
  const message_type* last_type_ = nullptr;
  // Decoding caches: the last message type and the last receiver.
  std::uint64_t last_hash_ = 0;
  const message_type* last_hash_type_ = nullptr;
  std::uint64_t last_dest_id_ = 0;
  export_entry* last_dest_ = nullptr;
  actor paused_on_;
  clock::time_point paused_since_;
  clock::time_point last_activity_;
  static constexpr std::chrono::microseconds spin_window{200};
  static constexpr std::size_t zero_copy_bytes = 4096;
  // Frames in flight are bounded by the queues (queue_frames per socket and
  // direction): keep that many buffers at most.
  std::shared_ptr<frame_pool> frames_ =
      std::make_shared<frame_pool>(static_cast<std::size_t>(cfg_.queue_frames), 2 * cfg_.batch_bytes);
};

void proxy::wake() noexcept { core_->ready(this); }
void proxy::on_exit() noexcept { core_->proxy_gone(this); }

}  // namespace detail

// ------------------------------------------------------------------ node

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
actor node::lookup(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout,
                   std::uint64_t iface) {
  return core_->lookup(where, name, timeout, iface);
}
void detail::feed_frames_for_test(node& n, const std::string& peer, const std::vector<std::string>& frames) {
  n.core_->feed(peer, frames);
}
std::uint64_t node::incarnation() const noexcept { return core_->incarnation(); }
node_stats node::stats() const { return core_->stats(); }

// ------------------------------------------------------------------ keys

key_pair generate_key_pair() {
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0)
    throw net_error("troupe::net: zmq_curve_keypair failed (ZeroMQ without CURVE support?)");
  return key_pair{pub, sec};
}

}  // namespace troupe::net
