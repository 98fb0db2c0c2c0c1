// node_core.hpp: the inside of a troupe::net::node (not installed). One I/O
// thread owns every ZeroMQ socket of the node, the proxies (cells whose
// mailbox that thread drains onto the network), the table of exported actors
// and the connections. The node's work is split by concern, one file each:
//   wire.hpp/.cpp   the frame and record layout: pure functions, no sockets,
//                   no actors (fuzzed alone: tests/fuzz/net_wire_fuzz.cpp);
//   transport.cpp   ZeroMQ: sockets, the poll loop, sending and receiving
//                   frames, flow control, the CURVE key allow-list (ZAP);
//   session.cpp     connections: handshake, incarnations, sequence numbers,
//                   type announcements, heartbeats, the failure detector
//                   (failure_detector.hpp), a peer unreachable or lost;
//   actors.cpp      proxies, exports, lookups, monitors, and the data
//                   records between them and the local actors;
//   node.cpp        the node's life (start, close, the actor system's
//                   shutdown) and the public API.
// The core is reached through troupe/ext/ only: proxies are ext::owned_cell,
// messages are ext::mail, the node is an ext::shutdown_client.
//
// Actor references (wire.hpp) name (incarnation of the node that runs the
// actor, its id there). A node exports a local actor when a reference to it
// is written, counting how often per connection; the peer's proxy counts how
// often it read it and gives the count back when it is freed (release), so an
// export dies only when no reference to it is in flight (no race between a
// release and a new reference).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "failure_detector.hpp"
#include "troupe/ext/messages.hpp"
#include "troupe/ext/owned_cell.hpp"
#include "troupe/ext/system.hpp"
#include "troupe/net/node.hpp"
#include "wire.hpp"

namespace troupe::net::detail {

using clock = std::chrono::steady_clock;

/// 16 hex digits (incarnations in messages).
std::string hex(std::uint64_t v);

class node_core;

/// Frame buffers that ZeroMQ sends without copying them (zmq_msg_init_data)
/// and gives back when it is done, from its own I/O thread. Without them a
/// frame costs ZeroMQ a malloc and a copy of every byte, and the malloc'd
/// memory keeps going back to the kernel and coming in again: measured on
/// remote_pipeline, 98 k page faults per 20 M tuples (480 MB) in the sending
/// node's I/O thread and ZeroMQ's, 40% of them in that copy. A pooled buffer
/// keeps its pages. (transport.cpp)
class frame_pool : public std::enable_shared_from_this<frame_pool> {
 public:
  /// Keeps at most `keep` buffers, of at least `reserve` bytes (and at most
  /// 4 x `reserve`: a buffer grown by a huge frame is freed, not kept).
  frame_pool(std::size_t keep, std::size_t reserve) : keep_{keep}, reserve_{reserve} { free_.reserve(keep); }
  frame_pool(const frame_pool&) = delete;
  frame_pool& operator=(const frame_pool&) = delete;
  ~frame_pool();

  /// A message that owns the bytes of `frame`; `frame` is left empty, with
  /// the storage of a buffer given back earlier (or room reserved).
  zmq::message_t wrap(std::string& frame);

 private:
  struct buffer {
    std::string bytes;
    std::shared_ptr<frame_pool> home;  // alive until ZeroMQ gives the last buffer back
  };
  static void give_back(void* data, void* hint) noexcept;

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

/// A remote actor, as seen on this node: a cell drained outside the
/// scheduler, by the node's I/O thread, which writes each message to the
/// connection (actors.cpp). The sink (conn 0) is the node's own watcher of
/// exported actors: its mail is down messages.
class proxy final : public ext::owned_cell {
 public:
  proxy(actor_system& sys, std::shared_ptr<node_core> core, std::uint64_t conn, std::uint64_t rid, bool sink)
      : owned_cell{sys}, core_{std::move(core)}, conn_{conn}, rid_{rid}, sink_{sink} {}

  std::uint64_t conn() const noexcept { return conn_; }
  std::uint64_t rid() const noexcept { return rid_; }
  bool is_sink() const noexcept { return sink_; }
  std::uint64_t decoded = 0;  // references read (I/O thread; given back on exit)

 private:
  void notify() noexcept override;
  void on_end() noexcept override;

  std::shared_ptr<node_core> core_;
  std::uint64_t conn_;
  std::uint64_t rid_;
  bool sink_;
};

/// One peer, as this node talks to it (session.cpp; its socket: transport.cpp).
struct connection {
  std::uint64_t id = 0;
  bool outgoing = false;
  std::unique_ptr<zmq::socket_t> dealer;  // outgoing connections
  std::string routing_id;                 // incoming ones (the ROUTER's peer)
  std::string endpoint;
  std::uint64_t peer_inc = 0;
  std::string peer_name;
  bool ready = false;  // handshake done
  /// An outgoing connection the peer refused as a duplicate (it keeps the
  /// one it opened to us): its lookups wait here for that session (peer_inc).
  bool superseded = false;
  std::unordered_set<std::uint64_t> peer_types;
  std::uint64_t last_known_hash = 0;  // the last type found in peer_types
  std::size_t announced = 0;          // our types the peer was told of (registered_count() numbering)
  std::size_t handshake_types = 0;    // our types when we sent our handshake
  clock::time_point last_heard = clock::now();
  clock::time_point last_sent = clock::now();
  std::optional<phi_detector> liveness;  // judges the peer once the handshake is done
  bool broken = false;                   // ZeroMQ no longer knows the peer's side (ended at the next timers())
  std::uint64_t seq_out = 0, seq_in = 0;
  std::string out;              // the batch being filled
  zmq::message_t stuck;         // a whole frame ZeroMQ did not take yet (queue full)
  std::vector<proxy*> blocked;  // proxies waiting for room (a reference each)
  /// The peer's actors it asked us to hold data back for (pause records),
  /// and the proxies of theirs waiting for a resume (a reference each).
  std::unordered_set<std::uint64_t> paused_rids;
  std::vector<proxy*> held;
  /// Requests sent through this connection and not answered yet.
  std::unordered_map<std::pair<std::uint64_t, std::uint64_t>, actor, pair_hash> requests;
  std::vector<std::uint64_t> waiting_lookups;  // sent once ready
  bool told_refusal = false;                   // untrusted_peers: a refusal from this peer was logged
  // Decoding cache: the proxy of the last remote actor read on this
  // connection (it keeps that proxy alive until another one replaces it).
  std::uint64_t last_from_rid = 0;
  actor last_from;
  // Encoding cache: the last local sender written on this connection.
  actor_cell* last_sender = nullptr;
  std::uint64_t* last_sender_count = nullptr;

  bool has_stuck() const noexcept { return stuck.size() != 0; }
  std::string describe() const;
};

/// What a lookup ends with: a handle, or why there is none.
struct lookup_result {
  actor a;
  std::string error;
};
/// Called once, on the I/O thread, when a lookup ends.
using lookup_done = std::function<void(lookup_result)>;

class node_core final : public handle_context,
                        public ext::shutdown_client,
                        public std::enable_shared_from_this<node_core> {
 public:
  // ------------------------------------------------ life (node.cpp)
  node_core(actor_system& sys, node_config cfg);
  ~node_core();
  node_core(const node_core&) = delete;
  node_core& operator=(const node_core&) = delete;

  void start();
  void close();
  void cancel_for_shutdown() noexcept override;
  void join_io();
  void feed(const std::string& peer, const std::vector<std::string>& frames);
  std::uint64_t incarnation() const noexcept { return inc_; }
  node_stats stats() const;

  // ------------------------------------------------ any thread (transport.cpp)
  void post(std::function<void()> f);
  template <class R>
  R call(std::function<R()> f) {
    if (stopping_.load()) throw net_error("troupe::net: the node is closed");
    auto task = std::make_shared<std::packaged_task<R()>>(std::move(f));
    auto fut = task->get_future();
    post([task] { (*task)(); });
    return fut.get();
  }
  std::string listen(const std::string& endpoint);
  /// Any thread (node::retire_peer, readmit_peer): posted to the I/O thread;
  /// nothing once the node is closed.
  void retire(std::uint64_t inc, std::string why);
  void readmit(std::uint64_t inc);

  // ------------------------------------------------ actors (actors.cpp)
  void publish(const actor& a, const std::string& name, std::uint64_t iface);
  actor lookup(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout,
               std::uint64_t iface);
  /// Any thread: starts a lookup; `done` runs on the I/O thread when it ends.
  void lookup_async(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout,
                    std::uint64_t iface, lookup_done done);
  /// Any thread: `p` has mail (its notify).
  void ready(proxy* p) noexcept;
  /// Any thread: `p` ended (its on_end).
  void proxy_gone(proxy* p) noexcept;

  // handle_context (I/O thread, while a record is written or read)
  void write_actor(writer& w, const actor& a) override;
  actor read_actor(reader& r) override;

  // ------------------------------------------------ session (session.cpp)
  /// One frame from a peer: `c` is its connection, or null for a frame from
  /// a new ROUTER peer (`rid`), which must be a hello. Public for the
  /// decoder's fuzz test.
  void handle_frame(connection* c, const std::string* rid, const char* data, std::size_t size);

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
    lookup_done done;
    std::uint64_t conn = 0;
    std::string name{};
    std::uint64_t iface = 0;
    clock::time_point deadline{};
    std::string endpoint{};
    std::chrono::milliseconds timeout{};
  };
  struct counters {
    std::atomic<std::uint64_t> frames_in{0}, frames_out{0}, messages_in{0}, messages_out{0}, malformed{0},
        unknown_types{0}, unsendable{0}, unknown_actors{0}, stale{0}, rejected_keys{0}, peers_lost{0},
        peers_unreachable{0}, peers_rejoined{0}, flow_pauses{0}, heartbeats_out{0}, duplicates_refused{0},
        refused_signals{0}, refused_actors{0}, peers_retired{0};
    std::atomic<std::size_t> peers{0}, exports{0};
  };

  // ------------------------------------------------ transport.cpp
  void poke() noexcept;
  void tune(zmq::socket_t& s);
  void run();
  bool busy() const noexcept { return !ready_.empty(); }
  bool any_stuck() const noexcept;
  long poll_ms() const noexcept;
  void run_inputs();
  /// Sends `frame` (emptied when sent); false: ZeroMQ's queue is full.
  bool send_frame(connection& c, zmq::message_t& frame);
  void flush(connection& c);
  bool read_budget_left(int frames, clock::time_point since) const;
  /// Rebuilds poll_items_ (only when the set of sockets changed: poll_dirty_).
  void rebuild_poll_set();
  void read_router();
  void read_dealer(std::uint64_t cid);
  void handle_zap();

  // ------------------------------------------------ session.cpp
  /// The outgoing connection to `where` (made, with its hello sent, when
  /// there is none); null with `error` set when the endpoint is bad.
  connection* connect(const remote_address& where, std::string& error);
  /// A new connection in conns_ (its failure detector set up).
  connection* add_connection();
  /// Opens a record in c's batch (the frame's header first when the batch
  /// is empty). Types registered since the peer was last told go first (a
  /// record of their own): whatever this record makes the peer send back,
  /// the peer knows our types as of now.
  std::size_t begin_record(connection& c, bool announce = true);
  void announce_types(connection& c);
  static void end_record(connection& c, std::size_t at) noexcept { wire::close_record(c.out, at); }
  /// One record written by `body(writer&)` (handle context: this node, for c).
  template <class F>
  void put_record(connection& c, F&& body, bool announce = true) {
    const std::size_t at = begin_record(c, announce);
    writer w{c.out, this};
    cur_ = &c;
    body(w);
    end_record(c, at);
    if (c.out.size() >= cfg_.batch_bytes) flush(c);
  }
  void send_handshake(connection& c, wire::rec kind, std::uint8_t flags = 0);
  /// Our own outgoing connection to the node that sent a hello from
  /// incarnation `inc`, listening at `endpoints` (null when there is none).
  connection* own_connection_to(std::uint64_t inc, const std::vector<std::string>& endpoints);
  /// Hands the lookups waiting on `from` (not ready) over to `to`.
  void move_lookups(connection& from, connection& to);
  void heartbeat(connection& c);
  void handle_record(connection& c, reader& r, std::uint64_t src);
  void on_handshake(connection& c, wire::rec kind, reader& r, std::uint64_t src);
  void timers();
  /// This node's I/O thread did not run for a while (starved, or the
  /// process stopped): the peers' silence meanwhile is not theirs.
  void forgive_stall(clock::time_point now);
  /// How a session ends. Only `closed` (a bye) means the peer's incarnation
  /// is gone for good (its later frames are refused); after the others the
  /// same incarnation may connect again. (A restarted peer is retired when
  /// its new incarnation answers at the same endpoint: on_handshake.)
  enum class ending { unreachable, frames_lost, broken, closed, this_node_closed };
  /// The session of `c` ends: its proxies end, its requests and lookups
  /// fail (all with net_errc::remote_unreachable and `why`), the references
  /// it held to local actors are dropped. Destroys `c`.
  void end_session(connection& c, const std::string& why, ending how);
  void drop_connection(std::uint64_t cid);

  // ------------------------------------------------ actors.cpp
  void start_lookup(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout,
                    std::uint64_t iface, lookup_done done);
  /// Ends a lookup: its callback, which must not throw out into this thread.
  void finish_lookup(pending_lookup& l, lookup_result r);
  void send_lookup(connection& c, std::uint64_t token);
  void expire_lookups(clock::time_point now);
  void on_lookup(connection& c, const wire::lookup& l);
  void on_lookup_reply(const wire::lookup_reply& l);
  /// How `a` travels on `c` (exports a local actor).
  wire::actor_ref ref_of(connection& c, const actor& a);
  /// The actor a reference read on cur_ names (a proxy for a remote one).
  actor resolve(const wire::actor_ref& ref);
  actor proxy_for(connection& c, std::uint64_t rid);
  actor find_or_make_proxy(connection& c, std::uint64_t rid);
  /// Drains the proxies that have mail onto their connections.
  void drain_ready();
  /// One message from a proxy's mailbox to the wire. Returns false when the
  /// connection's queue is full (stop draining it).
  bool forward(connection& c, proxy& p, ext::mail m);
  /// A message that cannot go: a dead letter; a request gets `e` back.
  void fail_message(const ext::mail& m, const error& e);
  /// The sink monitors exported actors: tell every holder when one ends.
  void handle_sink(ext::mail m);
  void on_data(connection& c, reader& r);
  /// untrusted_peers: whether the peer of `c` was handed `e` (a reference
  /// to it written to c and not given back). Always true otherwise.
  bool reachable(const export_entry& e, const connection& c) const;
  /// untrusted_peers: counts a refused message or monitor and logs the first
  /// refusal of each peer.
  void refuse(connection& c, std::atomic<std::uint64_t>& counter, const std::string& what);
  void on_monitor(connection& c, std::uint64_t id);
  void on_down(connection& c, const wire::down& d);
  void on_release(connection& c, const wire::release& x);
  /// Per-receiver flow control: `to` (exported as `id`) is over its soft
  /// limit after a record from `c`: ask c's peer to hold back its data for it.
  void ask_pause(connection& c, std::uint64_t id, const actor& to);
  // The pause ask_pause recorded last (receiver, connection): valid while
  // pausing_ holds it (check_pauses forgets it when it ends the pause).
  bool last_pause_ = false;
  std::uint64_t last_pause_id_ = 0, last_pause_conn_ = 0;
  /// Resumes the peers of the receivers that drained (or waited too long).
  void check_pauses(clock::time_point now);
  /// The last resort behind the pauses: whether reading is stopped for a
  /// moment because a receiver's mailbox got far over its limit anyway
  /// (flooded_; see actors.cpp).
  bool flooded();
  void on_flow(connection& c, wire::rec kind, std::uint64_t id);
  void drop_export(std::unordered_map<std::uint64_t, export_entry>::iterator it);
  void send_down(connection& c, std::uint64_t id, const error& reason);
  void send_release(std::uint64_t cid, std::uint64_t id, std::uint64_t n);

  // ------------------------------------------------ node.cpp
  void shutdown_io();

  actor_system& sys_;
  node_config cfg_;

 public:
  /// A log line (node_config::log, or stderr), prefixed with the node's name.
  void log(const std::string& what) const {
    const std::string line = "troupe::net: node '" + cfg_.name + "': " + what;
    if (cfg_.log) cfg_.log(line);
    else std::fprintf(stderr, "%s\n", line.c_str());
  }

 private:
  std::uint64_t inc_ = 0;
  std::unordered_set<std::string> trusted_;
  zmq::context_t ctx_{1};
  std::unique_ptr<zmq::socket_t> router_;
  std::unique_ptr<zmq::socket_t> zap_;
  std::vector<std::string> listening_;  // the endpoints bound (told to peers in the handshake)
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
  /// The poll set: the eventfd, the ZAP socket, the ROUTER, then a DEALER
  /// per outgoing connection (poll_conn_: its connection). Rebuilt only
  /// when a socket comes or goes (poll_dirty_), not on every turn of the
  /// loop: with hundreds of connections that rebuild was most of an idle
  /// node's work. poll_control_: the items before the peers' sockets.
  std::vector<zmq::pollitem_t> poll_items_;
  std::vector<std::uint64_t> poll_conn_;
  std::size_t poll_control_ = 0;
  bool poll_dirty_ = true;
  std::deque<proxy*> ready_;
  std::unordered_map<std::uint64_t, std::unique_ptr<connection>> conns_;
  std::unordered_map<std::string, connection*> by_routing_;
  std::unordered_map<std::string, connection*> by_endpoint_;
  std::unordered_map<std::uint64_t, connection*> by_inc_;
  std::unordered_set<std::uint64_t> dead_incs_;  // closed, restarted or retired: refused
  /// Of those, the ones retire() put there (only these may be readmitted).
  std::unordered_set<std::uint64_t> retired_incs_;
  /// Incarnations found unreachable and not back yet (for peers_rejoined),
  /// and per endpoint the last peer found unreachable there (for the error
  /// of a lookup that gets no answer).
  struct unreachable_peer {
    std::uint64_t inc = 0;
    std::string who, why;
    clock::time_point when;
  };
  std::unordered_set<std::uint64_t> unreachable_incs_;
  std::unordered_map<std::string, unreachable_peer> unreachable_at_;
  /// Local receivers over their soft limit, by export id: the connections
  /// asked to pause for them, and since when.
  struct flow_pause {
    actor a;
    std::vector<std::uint64_t> conns;
    clock::time_point since;
  };
  std::unordered_map<std::uint64_t, flow_pause> pausing_;
  clock::time_point last_tick_ = clock::now();
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
  clock::time_point last_activity_;
  // A receiver paused this long is resumed even if still over its limit
  // (and paused again by the next record over it): it may be waiting for a
  // response that comes through the same peer's held data.
  static constexpr std::chrono::milliseconds max_pause{100};
  actor flooded_;
  clock::time_point flooded_since_;
  static constexpr std::chrono::microseconds spin_window{200};
  static constexpr std::size_t zero_copy_bytes = 4096;
  // Frames in flight are bounded by the queues (queue_frames per socket and
  // direction): keep that many buffers at most.
  std::shared_ptr<frame_pool> frames_ =
      std::make_shared<frame_pool>(static_cast<std::size_t>(cfg_.queue_frames), 2 * cfg_.batch_bytes);
};

}  // namespace troupe::net::detail
