// node.hpp: remote actors (the optional troupe::net module, over ZeroMQ).
// A node joins an actor system to the network: it publishes local actors
// under names and gives handles to actors published by other nodes. Such a
// handle is used exactly like a local one (send, request, monitor, link,
// typed actors), and handles inside messages travel with them.
//   troupe::net::node net{sys, troupe::net::node_config{.keys = mine, .trusted_keys = {theirs}}};
//   net.listen("tcp://127.0.0.1:7000");
//   net.publish(kv, "kv");
//   ...on another node:
//   auto kv = net.remote_actor({"tcp://127.0.0.1:7000", their_public_key}, "kv", 2s);
// Security is on by default: ZeroMQ's CURVE (libsodium) encrypts and
// authenticates every connection; a node accepts only the public keys it
// trusts. Plaintext needs security::plaintext, and is reported on stderr.
// Guarantees: per sender-receiver order; at-most-once delivery; a node that
// goes silent (killed, frozen, cut off: the phi-accrual failure detector, at
// most heartbeat_timeout) is unreachable: its proxies end with
// net_errc::remote_unreachable, so monitors get down_msg, links exit_msg, and
// requests in flight an error. Frames lost in between end the session the
// same way (nothing is lost silently). The same incarnation may come back: a
// new remote_actor reconnects. A restarted node is a new incarnation:
// nothing meant for the old one reaches it.
// Declare the node after the actor_system it serves (it is destroyed first).
// Threads: one I/O thread per node (plus ZeroMQ's own). See docs/net.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "troupe/net/codec.hpp"

namespace troupe::net {

/// A network operation failed; the message says what and where
/// (troupe::exception with net_errc::operation_failed).
class net_error : public std::runtime_error, public troupe::exception {
 public:
  explicit net_error(const std::string& what)
      : std::runtime_error{what}, troupe::exception{net_errc::operation_failed} {}
  explicit net_error(const char* what) : std::runtime_error{what}, troupe::exception{net_errc::operation_failed} {}
};

/// A CURVE key pair, each key in Z85 text (40 characters).
struct key_pair {
  std::string public_key;
  std::string secret_key;
};

/// A new random key pair (libsodium through ZeroMQ).
key_pair generate_key_pair();
/// Writes `<base>.key` (both keys, owner-only permissions 0600) and
/// `<base>.pub` (the public key); throws net_error naming the file.
void save_key_pair(const key_pair& keys, const std::string& base);
/// Reads a `.key` file written by save_key_pair; refuses a file that others
/// may read (net_error).
key_pair load_key_pair(const std::string& key_file);
/// Reads a public key (a `.pub` file, or the first line of any file).
std::string load_public_key(const std::string& pub_file);

/// Named liveness settings (node_config::use; docs/net.md, "Liveness").
enum class liveness_profile {
  /// A LAN or a cloud (the default): heartbeat 1 s, unreachable after a
  /// silence phi judges abnormal (about 5 s when idle; at most 10 s).
  standard,
  /// A quiet low-latency LAN: heartbeat 100 ms, unreachable after about
  /// 0.6 s of silence (at most 1 s). Loaded machines may see false alarms.
  lan,
};

enum class security {
  curve,      ///< encrypted and authenticated (default)
  plaintext,  ///< no encryption, no authentication: trusted networks only
};

struct node_config {
  net::security security = security::curve;
  key_pair keys{};                        ///< this node's keys (curve)
  std::vector<std::string> trusted_keys;  ///< public keys allowed to connect (curve)
  // ---------------------------------------------------------------- liveness
  // (docs/net.md, "Liveness"). The defaults suit a LAN or a cloud, like
  // CAF's and Akka's; node_config::lan() or use(liveness_profile::lan) picks
  // the low-latency profile. A peer found silent is unreachable, not dead:
  // the same incarnation may come back and reconnect.
  /// Each connection sends a heartbeat when it has sent nothing else for this long.
  std::chrono::milliseconds heartbeat_interval{1000};
  /// A peer silent this long is unreachable, whatever the phi detector says
  /// (the upper bound of detection).
  std::chrono::milliseconds heartbeat_timeout{10000};
  /// The phi-accrual failure detector (per connection; any frame heard is an
  /// arrival): a peer is unreachable once phi, -log10 of the chance that a
  /// live peer stays silent this long, is above phi_threshold.
  double phi_threshold = 8.0;
  /// A silence this much longer than the usual gap is still normal (keep it
  /// above heartbeat_interval: data bursts teach the detector short gaps).
  std::chrono::milliseconds acceptable_heartbeat_pause{3000};
  /// The spread of the gaps is never assumed smaller than this.
  std::chrono::milliseconds phi_min_stddev{200};
  /// Gaps the detector remembers per connection.
  std::size_t phi_window = 100;
  /// Sets the liveness fields above to a named profile's values.
  node_config& use(liveness_profile p);
  /// A configuration with the lan liveness profile (the rest as default).
  static node_config lan() {
    node_config c;
    c.use(liveness_profile::lan);
    return c;
  }
  // ----------------------------------------------------------------------------
  /// Frames (of up to batch_bytes) queued per connection and direction before
  /// senders are held back (ZeroMQ's high-water marks).
  int queue_frames = 64;
  std::size_t batch_bytes = std::size_t{32} * 1024;
  /// The largest frame this node reads; ZeroMQ drops a connection that
  /// sends a larger one. A message bigger than this fails at the sender
  /// (an error naming its size), so give both nodes the same value.
  std::int64_t max_frame_bytes = 64LL * 1024 * 1024;
  std::string name = "troupe";  ///< for log lines
  /// Where the node's log lines go (a lost peer, plaintext mode, a failed
  /// poll or authentication answer), one line at a time without its
  /// newline, from the node's threads: empty, to stderr; a function that
  /// does nothing silences them.
  std::function<void(const std::string&)> log{};

  // ---- wire safety (docs/net.md, "Wire safety") ----
  /// Untrusted mode (off by default, like Akka's untrusted-mode): the peers
  /// may send to the actors this node handed them (published ones they
  /// looked up, and those whose handles this node sent them in messages),
  /// and to no other; and they may not send the runtime's signals: exit_msg,
  /// kill and down_msg messages from a peer are refused.
  /// Refusals are counted (node_stats::refused_signals, refused_actors) and
  /// logged once per peer. For peers whose keys are trusted to connect but
  /// whose programs are not trusted with this node's actors.
  bool untrusted_peers = false;
};

/// Where a node listens, and its public key (empty for plaintext).
struct remote_address {
  std::string endpoint;
  std::string public_key;
};

/// What a node has counted (a snapshot).
struct node_stats {
  std::uint64_t frames_in = 0, frames_out = 0;
  std::uint64_t messages_in = 0, messages_out = 0;
  std::uint64_t malformed = 0;          ///< frames or records that did not decode
  std::uint64_t unknown_types = 0;      ///< messages of a type this node has not registered
  std::uint64_t unsendable = 0;         ///< messages the peer could not read (type not registered there)
  std::uint64_t unknown_actors = 0;     ///< messages for actors this node does not export
  std::uint64_t stale = 0;              ///< frames from or for another incarnation
  std::uint64_t rejected_keys = 0;      ///< connections refused by the key allow-list
  std::uint64_t peers_lost = 0;         ///< sessions ended: peer unreachable, closed, restarted, or frames lost
  std::uint64_t peers_unreachable = 0;  ///< of those, peers found silent by the failure detector
  std::uint64_t peers_rejoined = 0;     ///< sessions opened again with an incarnation once unreachable
  std::uint64_t flow_pauses = 0;        ///< pauses asked of peers for a local receiver over its soft limit
  std::uint64_t heartbeats_out = 0;     ///< heartbeat frames sent (only links idle for a heartbeat_interval send them)
  std::uint64_t refused_signals = 0;    ///< exit, kill and down messages refused (untrusted_peers)
  std::uint64_t refused_actors = 0;     ///< messages and monitors for actors not handed to that peer (untrusted_peers)
  std::uint64_t peers_retired = 0;      ///< incarnations retired by retire_peer (a registry's verdict)
  /// Connections refused after the handshake because the pair of nodes has
  /// one already (both nodes connected to each other at the same time).
  std::uint64_t duplicates_refused = 0;
  /// peers: connections (one per pair of nodes, whichever opened it).
  std::size_t peers = 0, proxies = 0, exports = 0;
};

class node;

namespace detail {
class node_core;
/// A CURVE key in Z85 text: 40 characters that decode to 32 bytes.
bool is_z85_key(const std::string& k);
/// For the decoder's fuzz test only: hands `frames` to the node's I/O thread
/// as if they came, in this order, from a new peer named `peer`.
void feed_frames_for_test(node& n, const std::string& peer, const std::vector<std::string>& frames);
}  // namespace detail

class node {
 public:
  node(actor_system& sys, node_config cfg);
  ~node();
  node(const node&) = delete;
  node& operator=(const node&) = delete;

  /// Accepts connections at `endpoint` ("tcp://127.0.0.1:7000"; port "*" or 0
  /// picks a free one). Returns the endpoint actually bound. Throws net_error.
  std::string listen(const std::string& endpoint);

  /// Makes `a` reachable as `name` through this node (replaces an earlier one).
  void publish(const actor& a, const std::string& name);
  template <class... Sigs>
  void publish(const typed_actor<Sigs...>& a, const std::string& name) {
    publish_impl(a.address(), name, detail::add_interface(static_cast<typed_actor<Sigs...>*>(nullptr)));
  }

  /// A handle to the actor published as `name` at `where`. Throws net_error:
  /// bad endpoint, no answer within `timeout` (nobody listens, or a key is
  /// wrong), no such name.
  actor remote_actor(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout);
  /// What an asynchronous lookup ends with: a handle, or (`handle` empty)
  /// why there is none, in the words remote_actor's net_error would use.
  struct lookup_outcome {
    actor handle;
    std::string error;
  };
  /// Starts a lookup of `name` at `where` and returns at once; `done` is
  /// called exactly once, on the node's I/O thread, with the handle or the
  /// error (the same errors as remote_actor, the timeout included). `done`
  /// must be quick and must not block: no blocking remote_actor in it; send
  /// the handle to an actor, or set a promise. Many lookups may be in
  /// flight at once from one thread. Throws net_error only for a missing or
  /// malformed CURVE key, or a closed node.
  void remote_actor_async(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout,
                          std::function<void(lookup_outcome)> done);
  /// The same for a typed actor; the published actor's interface must be
  /// the same (net_error otherwise).
  template <class Handle>
  Handle remote_actor(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout) {
    auto iface = detail::add_interface(static_cast<Handle*>(nullptr));
    return Handle{lookup(where, name, timeout, iface)};
  }

  /// Ends this node's dealings with the peer node of `incarnation`, as
  /// something outside it decided (its registry lease expired: see
  /// registry::follow, membership.hpp; or an operator): its sessions end as
  /// if it had closed (proxies end and monitors get down_msg with
  /// net_errc::remote_unreachable naming `why`; requests and lookups waiting
  /// on it fail), and from then on its frames are refused and a lookup that
  /// reaches it fails, until readmit_peer. A peer's own detector would call
  /// it unreachable only while it is silent; this takes it out even when it
  /// still answers (a node cut off from the registry, which the others
  /// agreed is gone). Returns at once (the I/O thread does it); nothing once
  /// the node is closed, or for this node's own incarnation.
  void retire_peer(std::uint64_t incarnation, const std::string& why);
  /// Undoes retire_peer: that incarnation may connect again (a member that
  /// registered again). Nothing for an incarnation that closed or restarted.
  void readmit_peer(std::uint64_t incarnation);

  /// This node's incarnation: random, new at every start.
  std::uint64_t incarnation() const noexcept;
  node_stats stats() const;
  /// Ends every connection (proxies end with net_errc::remote_unreachable) and the
  /// I/O thread; the destructor calls it.
  void close();

 private:
  void publish_impl(const actor& a, const std::string& name, std::uint64_t iface);
  actor lookup(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout,
               std::uint64_t iface);
  friend void detail::feed_frames_for_test(node&, const std::string&, const std::vector<std::string>&);
  std::shared_ptr<detail::node_core> core_;
};

}  // namespace troupe::net
