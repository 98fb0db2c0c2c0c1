// local_peers.hpp: the ranks of a split graph inside one test process (no
// network): each rank its own actor system, the ranks' inlets in a directory
// shared in this process (ext::peers). The edges between ranks are the same
// runners and messages as across processes; troupe::net adds only the wire.
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "troupe/ext/edges.hpp"
#include "troupe/troupe.hpp"

namespace troupe_test {

using namespace std::chrono_literals;

/// The inlets every rank of one test publishes.
struct directory {
  std::mutex mtx;
  std::condition_variable cv;
  std::map<std::string, troupe::actor> inlets;
};

class local_peers final : public troupe::ext::peers {
 public:
  local_peers(std::shared_ptr<directory> d, std::size_t rank, std::size_t size, std::chrono::milliseconds timeout = 5s)
      : dir_{std::move(d)}, rank_{rank}, size_{size}, timeout_{timeout} {}
  std::size_t rank() const noexcept override { return rank_; }
  std::size_t size() const noexcept override { return size_; }
  std::string describe(std::size_t r) const override { return "rank " + std::to_string(r) + " (local)"; }
  void publish(const troupe::actor& inlet, const std::string& name) override {
    std::lock_guard<std::mutex> lock{dir_->mtx};
    dir_->inlets[std::to_string(rank_) + ":" + name] = inlet;
    dir_->cv.notify_all();
  }
  troupe::actor find(std::size_t r, const std::string& name) override {
    std::unique_lock<std::mutex> lock{dir_->mtx};
    const auto key = std::to_string(r) + ":" + name;
    if (!dir_->cv.wait_for(lock, timeout_, [&] { return dir_->inlets.count(key) != 0; }))
      throw std::runtime_error("no inlet '" + name + "' at rank " + std::to_string(r));
    return dir_->inlets[key];
  }
  std::chrono::milliseconds connect_timeout() const noexcept override { return timeout_; }

 private:
  std::shared_ptr<directory> dir_;
  std::size_t rank_, size_;
  std::chrono::milliseconds timeout_;
};

/// One system per rank, as processes would have.
struct ranks {
  explicit ranks(std::size_t n, std::size_t workers = 2) : dir{std::make_shared<directory>()} {
    for (std::size_t r = 0; r < n; ++r) {
      systems.push_back(std::make_unique<troupe::actor_system>(troupe::config{.workers = workers}));
      peers.push_back(std::make_unique<local_peers>(dir, r, n));
    }
  }
  /// Every rank's part, spawned from a thread each (a rank blocks until it
  /// finds the inlets of the ranks after it).
  template <class P>
  std::vector<troupe::stream::graph> spawn(const P& p, troupe::ext::edge_config cfg = {},
                                           troupe::stream::options o = {}) {
    std::vector<troupe::stream::graph> gs(systems.size());
    std::vector<std::thread> ts;
    std::vector<std::exception_ptr> errs(systems.size());
    for (std::size_t r = 0; r < systems.size(); ++r)
      ts.emplace_back([&, r] {
        try {
          gs[r] = troupe::ext::spawn_split(*systems[r], p, *peers[r], "g", cfg, o);
        } catch (...) {
          errs[r] = std::current_exception();
        }
      });
    for (auto& t : ts) t.join();
    for (auto& e : errs)
      if (e) std::rethrow_exception(e);
    return gs;
  }
  std::shared_ptr<directory> dir;
  std::vector<std::unique_ptr<troupe::actor_system>> systems;
  std::vector<std::unique_ptr<local_peers>> peers;
};

}  // namespace troupe_test
