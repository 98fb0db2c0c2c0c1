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
// Guarantees: per sender-receiver order; at-most-once delivery; a lost node
// (killed, frozen, cut off: no heartbeat for heartbeat_timeout) ends its
// proxies with net_errc::remote_unreachable, so monitors get down_msg, links
// exit_msg, and requests in flight an error. Frames lost in between end the
// connection the same way (nothing is lost silently). A restarted node is a
// new incarnation: nothing meant for the old one reaches it.
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

enum class security {
  curve,      ///< encrypted and authenticated (default)
  plaintext,  ///< no encryption, no authentication: trusted networks only
};

struct node_config {
  net::security security = security::curve;
  key_pair keys{};                        ///< this node's keys (curve)
  std::vector<std::string> trusted_keys;  ///< public keys allowed to connect (curve)
  /// Each connection sends a heartbeat when it has sent nothing else for
  /// this long, and a peer silent for heartbeat_timeout is lost.
  std::chrono::milliseconds heartbeat_interval{100};
  std::chrono::milliseconds heartbeat_timeout{600};
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
  std::uint64_t malformed = 0;       ///< frames or records that did not decode
  std::uint64_t unknown_types = 0;   ///< messages of a type this node has not registered
  std::uint64_t unsendable = 0;      ///< messages the peer could not read (type not registered there)
  std::uint64_t unknown_actors = 0;  ///< messages for actors this node does not export
  std::uint64_t stale = 0;           ///< frames from or for another incarnation
  std::uint64_t rejected_keys = 0;   ///< connections refused by the key allow-list
  std::uint64_t peers_lost = 0;
  std::uint64_t refused_signals = 0;  ///< exit, kill and down messages refused (untrusted_peers)
  std::uint64_t refused_actors = 0;   ///< messages and monitors for actors not handed to that peer (untrusted_peers)
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
  /// The same for a typed actor; the published actor's interface must be
  /// the same (net_error otherwise).
  template <class Handle>
  Handle remote_actor(const remote_address& where, const std::string& name, std::chrono::milliseconds timeout) {
    auto iface = detail::add_interface(static_cast<Handle*>(nullptr));
    return Handle{lookup(where, name, timeout, iface)};
  }

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
