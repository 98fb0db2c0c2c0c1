// The processes of a split graph: the cluster's directory of inlets, and the
// edges' messages (see include/troupe/net/channel.hpp).
#include "troupe/net/channel.hpp"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace troupe::net {

namespace detail {

void register_edge_messages() {
  static const bool once = [] {
    add_type<ext::edge_open>("troupe.edge_open");
    add_type<ext::edge_data>("troupe.edge_data");
    add_type<ext::edge_mark>("troupe.edge_mark");
    add_type<ext::edge_end>("troupe.edge_end");
    add_type<ext::edge_credit>("troupe.edge_credit");
    add_type<ext::edge_barrier>("troupe.edge_barrier");
    add_type<ext::checkpoint_hello>("troupe.checkpoint_hello");
    add_type<ext::checkpoint_trigger>("troupe.checkpoint_trigger");
    add_type<ext::checkpoint_done>("troupe.checkpoint_done");
    add_type<ext::checkpoint_complete>("troupe.checkpoint_complete");
    add_message<ext::edge_open, std::uint64_t, actor>();
    add_message<ext::edge_mark, std::uint64_t, std::uint64_t>();
    add_message<ext::edge_end, std::uint64_t, std::uint64_t>();
    add_message<ext::edge_credit, std::uint64_t, std::uint64_t, std::uint64_t>();
    add_message<ext::edge_barrier, std::uint64_t, std::uint64_t>();
    add_message<ext::checkpoint_hello, std::uint64_t, actor>();
    add_message<ext::checkpoint_trigger, std::uint64_t>();
    add_message<ext::checkpoint_done, std::uint64_t, std::uint64_t>();
    add_message<ext::checkpoint_complete, std::uint64_t>();
    return true;
  }();
  (void)once;
}

}  // namespace detail

// --------------------------------------------------------------- cluster

struct cluster::directory {
  std::mutex mtx;
  std::condition_variable cv;
  std::map<std::string, actor> inlets;
};

cluster::cluster(actor_system& sys, node& n, cluster_config cfg)
    : sys_{&sys}, node_{&n}, cfg_{std::move(cfg)}, dir_{std::make_unique<directory>()} {
  detail::register_edge_messages();
  if (cfg_.peers.empty()) throw net_error("troupe::net::cluster: no peers (one address per rank)");
  if (cfg_.rank >= cfg_.peers.size())
    throw net_error("troupe::net::cluster: rank " + std::to_string(cfg_.rank) + " is not below the " +
                    std::to_string(cfg_.peers.size()) + " peers");
  if (cfg_.peers.size() > 1) cfg_.peers[cfg_.rank].endpoint = n.listen(cfg_.peers[cfg_.rank].endpoint);
}

cluster::~cluster() = default;

std::string cluster::describe(std::size_t r) const {
  std::string s = "rank " + std::to_string(r);
  if (r < cfg_.peers.size()) s += " (" + cfg_.peers[r].endpoint + ")";
  return s;
}

void cluster::set_peer(std::size_t r, remote_address where) {
  if (r >= cfg_.peers.size() || r == cfg_.rank)
    throw net_error("troupe::net::cluster::set_peer: rank " + std::to_string(r) + " is not a peer");
  std::lock_guard<std::mutex> lock{dir_->mtx};
  cfg_.peers[r] = std::move(where);
}

void cluster::publish(const actor& inlet, const std::string& name) {
  {
    std::lock_guard<std::mutex> lock{dir_->mtx};
    dir_->inlets[name] = inlet;
  }
  dir_->cv.notify_all();
  if (cfg_.peers.size() > 1) node_->publish(inlet, name);
}

actor cluster::find(std::size_t r, const std::string& name) {
  const auto deadline = std::chrono::steady_clock::now() + cfg_.connect_timeout;
  if (r == cfg_.rank) {
    std::unique_lock<std::mutex> lock{dir_->mtx};
    for (;;) {
      if (auto it = dir_->inlets.find(name); it != dir_->inlets.end()) return it->second;
      if (dir_->cv.wait_until(lock, deadline) == std::cv_status::timeout)
        throw net_error("troupe::net: no inlet '" + name + "' in this process (" + describe(r) + ") within " +
                        std::to_string(cfg_.connect_timeout.count()) + " ms");
    }
  }
  if (r >= cfg_.peers.size())
    throw net_error("troupe::net: rank " + std::to_string(r) + " is not in the cluster (" +
                    std::to_string(cfg_.peers.size()) + " ranks)");
  std::string last;
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      std::string what = "troupe::net: no inlet '" + name + "' at " + describe(r);
      what += " within " + std::to_string(cfg_.connect_timeout.count()) + " ms (";
      what += last;
      what += ')';
      throw net_error(what);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    try {
      return node_->remote_actor(cfg_.peers[r], name, std::min(left, std::chrono::milliseconds{2000}));
    } catch (const net_error& e) {
      last = e.what();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds{20});
  }
}

}  // namespace troupe::net
