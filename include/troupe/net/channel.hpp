// channel.hpp: the processes of a split graph (the troupe::net module).
//   net::cluster cl{sys, node, {.rank = 0, .peers = {{"tcp://127.0.0.1:7000", k0}, {"tcp://127.0.0.1:7001", k1}}}};
//   auto g = net::split(cl, description);   // split.hpp
// A cluster is this process's view of the ranks of a split graph: where each
// one listens (a troupe::net node, CURVE or plaintext), and a directory of
// the inlets of the graph's edges, which every rank publishes and the others
// look up by name. It is the ext::peers of the one stream engine: the edges
// themselves are runners of the core (troupe/ext/edges.hpp), and their
// messages cross the wire through the node's codec (split.hpp registers the
// graph's element types).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "troupe/ext/edges.hpp"
#include "troupe/net/node.hpp"
#include "troupe/stream.hpp"

namespace troupe::net {

/// Sizes of a split graph's edges between processes (the same on every
/// process): elements per message, how long a partial batch may wait, and
/// the credit per lane (see ext::edge_config).
using edge_config = ext::edge_config;

/// Where the processes of a split graph run: one address per rank.
struct cluster_config {
  std::size_t rank = 0;
  /// peers[r]: where rank r listens (peers[rank]: this process; bound by the
  /// cluster) and its public key (empty for plaintext).
  std::vector<remote_address> peers;
  /// How long finding a peer's inlet, and waiting for a sender's first
  /// message, may take (peers may start in any order).
  std::chrono::milliseconds connect_timeout{20000};
};

/// The processes of a split graph, as this process sees them: a node listening
/// at its own address and a directory of the inlets of its edges.
class cluster final : public ext::peers {
 public:
  /// Listens at cfg.peers[cfg.rank] (net_error: a bad rank or endpoint).
  cluster(actor_system& sys, node& n, cluster_config cfg);
  ~cluster() override;
  cluster(const cluster&) = delete;
  cluster& operator=(const cluster&) = delete;

  std::size_t rank() const noexcept override { return cfg_.rank; }
  std::size_t size() const noexcept override { return cfg_.peers.size(); }
  actor_system& system() const noexcept { return *sys_; }
  const cluster_config& config() const noexcept { return cfg_; }
  /// "rank 1 (tcp://127.0.0.1:7001)"
  std::string describe(std::size_t rank) const override;
  std::chrono::milliseconds connect_timeout() const noexcept override { return cfg_.connect_timeout; }
  /// Where this process listens (the endpoint bound: a port "*" resolved).
  const remote_address& self_address() const noexcept { return cfg_.peers[cfg_.rank]; }
  /// Sets where rank `r` listens, when it was not known at construction
  /// (a peer that bound port "*"); before any graph looks for it.
  void set_peer(std::size_t r, remote_address where);

  /// Makes an inlet findable by the processes of the cluster.
  void publish(const actor& inlet, const std::string& name) override;
  /// The inlet `name` of rank `rank`: this process's own, or a remote one,
  /// retried until connect_timeout (net_error then, naming both).
  actor find(std::size_t rank, const std::string& name) override;

 private:
  struct directory;
  actor_system* sys_;
  node* node_;
  cluster_config cfg_;
  std::unique_ptr<directory> dir_;
};

/// A split graph lost an edge: a peer was lost, or its part of the graph
/// failed (the core's stream::edge_error; graph::error() is
/// errc::edge_lost and names the peer).
using channel_error = stream::edge_error;

/// An edge batch travels as the vector of its elements.
template <class T>
struct codec<ext::batch<T>> {
  static std::string name() { return codec<std::vector<T>>::name(); }
  static void write(writer& w, const ext::batch<T>& b) { codec<std::vector<T>>::write(w, b.items); }
  static void read(reader& r, ext::batch<T>& b) { codec<std::vector<T>>::read(r, b.items); }
};

/// An element inside an ordered farm: whether it has a value (a replica may
/// emit nothing for an input), the value, its position and `last`.
template <class T>
struct codec<ext::sequenced<T>> {
  static std::string name() { return "sequenced<" + codec<T>::name() + ">"; }
  static void write(writer& w, const ext::sequenced<T>& e) {
    if (!e.reply.empty())
      throw std::logic_error("troupe::net: an element that answers an actor cannot cross processes");
    w.raw(static_cast<std::uint8_t>((e.value ? 1 : 0) | (e.last ? 2 : 0)));
    w.raw(e.seq);
    if (e.value) codec<T>::write(w, *e.value);
  }
  static void read(reader& r, ext::sequenced<T>& e) {
    const auto flags = r.raw<std::uint8_t>("sequenced flags");
    if (flags > 3) throw decode_error("sequenced flags hold " + std::to_string(flags));
    e.seq = r.raw<std::uint64_t>("sequence number");
    e.last = (flags & 2) != 0;
    e.reply = {};
    if ((flags & 1) != 0) codec<T>::read(r, e.value.emplace());
    else e.value.reset();
  }
};

namespace detail {
/// The messages of the edges that do not depend on the element type (idempotent).
void register_edge_messages();
/// The messages that carry elements of type E (idempotent).
template <class E>
void register_edge_type() {
  static const bool once = [] {
    register_edge_messages();
    add_message<ext::edge_data, std::uint64_t, ext::batch<E>>();
    add_message<ext::edge_data, std::uint64_t, ext::batch<ext::sequenced<E>>>();
    return true;
  }();
  (void)once;
}
}  // namespace detail

}  // namespace troupe::net
