// membership.hpp: who is in a cluster of troupe::net nodes, kept in etcd (the
// optional troupe::membership module, on troupe::net, libcurl and etcd's
// JSON gateway). Instead of a list of addresses given to every process by
// hand, each node registers itself under a name; the others look it up,
// list the members and watch them join and leave:
//   net::registry reg{{.etcd = {"http://10.0.0.2:2379", "http://10.0.0.3:2379"}, .cluster = "shop"}};
//   reg.join({.name = "cart-1", .address = {node.listen("tcp://10.0.0.5:*"), keys.public_key},
//             .incarnation = node.incarnation()});
//   auto kv = node.remote_actor(reg.wait_for("store-1", 10s).address, "kv", 2s);
//   auto sub = reg.watch([](const net::member_event& e) { if (e.change == net::member_change::left) ... });
// A member's entry lives on an etcd lease that the registry keeps alive from
// a thread of its own: when the process dies, freezes or loses etcd for
// longer than lease_ttl, etcd deletes the entry, and every watcher sees that
// member leave. etcd agrees on it (Raft): every member sees the same joins
// and leaves in the same order, and a leave is final for that incarnation.
// When not to use it: two or three fixed processes are simpler with
// peers_from_list (launcher.hpp). Costs: one thread per registry that has
// joined (a keep-alive request every lease_ttl / 3) and one per watch (an
// HTTP stream that is idle between changes); no cost on troupe::net's data
// path. Errors are net_error naming the call, the etcd member and its
// answer; every call is bounded by config.timeout. See docs/net.md,
// "Membership".
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "troupe/net/channel.hpp"
#include "troupe/net/node.hpp"

namespace troupe::net {

/// Where the registry is kept, and how.
struct registry_config {
  /// The client URLs of the etcd members ("http://127.0.0.1:2379"); each
  /// call tries them in turn until one answers.
  std::vector<std::string> etcd{};
  /// The cluster's name (letters, digits, '.', '_', '-'): members of other
  /// clusters in the same etcd are not seen.
  std::string cluster = "troupe";
  /// Where in etcd's key space: keys are <prefix>/<cluster>/members/<name>.
  std::string prefix = "/troupe";
  /// How long a member stays registered after its keep-alives stop (etcd
  /// rounds it up to its own minimum, about 2 s with its default settings).
  std::chrono::seconds lease_ttl{10};
  /// The bound of every call (all etcd members tried within it).
  std::chrono::milliseconds timeout{5000};
  /// A watch's stream that stays silent this long is opened again (through
  /// another etcd member where one does not answer): a frozen etcd member
  /// keeps its connections open and silent.
  std::chrono::milliseconds watch_idle{10000};
  /// Where the registry's log lines go (a lease renewed after it expired,
  /// etcd unreachable, a record that is not a member), one line at a time:
  /// empty, to stderr; a function that does nothing silences them.
  std::function<void(const std::string&)> log{};
};

/// One member of a cluster, as registered.
struct member {
  std::string name{};                               ///< unique in the cluster
  remote_address address{};                         ///< where its node listens, and its public key
  std::uint64_t incarnation = 0;                    ///< node::incarnation() (0: not a troupe::net node)
  std::map<std::string, std::string> attributes{};  ///< anything else (a role, a zone)
};

enum class member_change {
  joined,   ///< a new member, or a known name with a new incarnation
  left,     ///< gone: it left, or its lease expired (treat it as down)
  updated,  ///< the same incarnation with another address or attributes
};
/// "joined", "left" or "updated".
const char* to_string(member_change c) noexcept;

/// A change in a cluster's membership, as a watch delivers it.
struct member_event {
  member_change change = member_change::joined;
  member who{};  ///< for left: the member as it was last seen
};

/// A watch of a cluster (registry::watch): ends when destroyed or cancelled.
/// Its callback runs on the watch's own thread, one event at a time.
class subscription {
 public:
  subscription() = default;
  ~subscription();
  subscription(subscription&&) noexcept;
  subscription& operator=(subscription&&) noexcept;
  subscription(const subscription&) = delete;
  subscription& operator=(const subscription&) = delete;
  /// Stops the watch and waits for its thread (not when called from its own
  /// callback: then it stops after that call). Idempotent.
  void cancel();
  explicit operator bool() const noexcept { return static_cast<bool>(state_); }

  struct state;  // (membership's own)

 private:
  friend class registry;
  std::shared_ptr<state> state_;
};

/// A cluster's membership in etcd. Thread-safe: its calls may come from any
/// thread; a registry joins as one member at most.
class registry {
 public:
  /// Checks the configuration (net_error naming a bad URL, name, prefix or
  /// duration); connects to nothing yet.
  explicit registry(registry_config cfg);
  /// Leaves, if joined (errors go to the log: the lease then expires on its own).
  ~registry();
  registry(const registry&) = delete;
  registry& operator=(const registry&) = delete;

  /// Registers `self` on a new lease and keeps it alive. Throws net_error:
  /// a bad name, endpoint (tcp://HOST:PORT, the port bound: not * or 0) or
  /// public key; the name held by another member (its entry goes when it
  /// leaves or its lease expires); this registry has joined already; etcd
  /// unreachable. Should the lease expire anyway (etcd unreachable for
  /// longer than lease_ttl), the registry registers `self` again when etcd
  /// answers, and says so in the log: watchers see it leave and join again.
  void join(const member& self);
  /// Deletes this registry's entry (others see it leave) and stops its
  /// keep-alives; nothing when not joined. Throws net_error if etcd does not
  /// answer (the entry then goes when its lease expires).
  void leave();
  /// Whether join() succeeded and leave() was not called since.
  bool joined() const;

  /// The member registered as `name`, or std::nullopt. Throws net_error
  /// (etcd unreachable, or the entry is not a member record).
  std::optional<member> lookup(const std::string& name);
  /// Every member of the cluster, by name. Entries that are not member
  /// records are left out, and named in the log.
  std::vector<member> members();
  /// The member `name`, once registered; net_error naming it after `timeout`.
  member wait_for(const std::string& name, std::chrono::milliseconds timeout);
  /// The members `names`, in this order, once all are registered; net_error
  /// naming the missing ones after `timeout`.
  std::vector<member> wait_for(const std::vector<std::string>& names, std::chrono::milliseconds timeout);

  /// Calls `on_change` for every change of the membership, from the watch's
  /// thread: first `joined` for each member present, then the changes as
  /// etcd orders them. Across etcd failures the watch goes on through the
  /// other etcd members; what changed meanwhile is delivered when it
  /// reconnects (a member that came and went unseen is not). An exception
  /// from `on_change` is logged and the watch goes on.
  subscription watch(std::function<void(const member_event&)> on_change);
  /// The same, each event a member_event message sent to `to` (from no
  /// sender). End the subscription before `sys`.
  subscription watch(actor_system& sys, const actor& to);

  /// Makes `n` act on the registry's verdicts: when a member leaves (it
  /// left, or its lease expired: etcd agreed it is gone), `n` retires its
  /// incarnation (node::retire_peer: its sessions end, monitors get down_msg
  /// with net_errc::remote_unreachable, its frames are refused), even if it
  /// still answers; when that incarnation registers again, `n` takes it back
  /// (node::readmit_peer). Members without an incarnation, and `n` itself,
  /// are left alone. A watch (its thread, its reconnects); end the
  /// subscription before `n`.
  subscription follow(node& n);
  const registry_config& config() const noexcept;

  struct impl;  // (membership's own)

 private:
  std::shared_ptr<impl> impl_;
};

/// For split graphs: the addresses of the members `names`, in this order
/// (rank r: names[r]), once all are registered, in the form cluster_config
/// and the launcher take them. Throws net_error after `timeout`.
std::vector<remote_address> peers_from_registry(registry& reg, const std::vector<std::string>& names,
                                                std::chrono::milliseconds timeout);
/// Sets every other rank's address in `cl` (cluster::set_peer) from the
/// members `names` (rank r: names[r]), once all are registered; this
/// process has joined as names[cl.rank()] with cl.self_address(). Throws
/// net_error: `names` has not cl.size() entries, or after `timeout`.
void peers_from_registry(cluster& cl, registry& reg, const std::vector<std::string>& names,
                         std::chrono::milliseconds timeout);

}  // namespace troupe::net
