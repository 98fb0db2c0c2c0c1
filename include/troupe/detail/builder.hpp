// layer: stream
// builder.hpp: what a graph's builder carries while it makes the runners
// (build.hpp makes them; edge.hpp adds what a graph split across processes
// needs).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include "troupe/detail/channel.hpp"
#include "troupe/detail/graph_state.hpp"
#include "troupe/ext/edges.hpp"

namespace troupe::detail {

class edge_sender_base;
class edge_receiver_base;

/// What a graph split across processes adds to its builder: the peers, and
/// every slot (a runner of this process or a stub of another's) in build
/// order, which is the same in every process, with the edges between them.
struct split_plan {
  ext::peers* peers = nullptr;
  std::string name;
  ext::edge_config cfg;

  struct slot {
    std::size_t rank = 0, replica = 0;
    bool generates = false;        // its node makes watermarks
    runner_base* local = nullptr;  // its runner, on this rank
    std::vector<std::size_t> producers;
  };
  std::vector<slot> slots;
  std::vector<edge_sender_base*> senders;
  std::map<runner_base*, edge_receiver_base*> receivers;  // by the local replica they feed
  std::map<std::type_index, const void*> makers;          // edge runners by element type (install_edges)

  std::size_t rank() const noexcept { return peers->rank(); }
  std::string inlet_name(std::size_t slot) const { return name + "/" + std::to_string(slot); }
};

struct builder {
  graph_state& graph;
  std::size_t capacity;            // slots per channel
  std::size_t default_replicas;    // a farm of 0 replicas: one per worker
  runner_settings settings;        // of the next runner (placement, replica index, ...)
  std::size_t threads = 0;         // dedicated threads so far in the current placement group
  split_plan* split = nullptr;     // a graph split across processes (else null)
  std::vector<std::size_t> ranks;  // where the current part runs (troupe::placed; empty: rank 0)
  std::size_t slots = 0;           // runner slots so far
};

template <class Runner>
Runner& add_runner(builder& b, std::unique_ptr<Runner> r) {
  auto& ref = *r;
  b.graph.runners.push_back(std::move(r));
  return ref;
}

/// The settings of the next runner slot (a dedicated one gets the next
/// thread slot). A node that blocks (needs_own_thread, e.g. seq_actor)
/// always gets a thread of its own.
inline runner_settings next_settings(builder& b, bool needs_own_thread = false) {
  auto s = b.settings;
  if (needs_own_thread) s.dedicated = true;
  s.rank = b.ranks.empty() ? 0 : b.ranks.front();
  s.slot = b.slots++;
  if (b.split != nullptr) {
    b.split->slots.emplace_back();
    b.split->slots.back().rank = s.rank;
    b.split->slots.back().replica = s.replica;
  }
  const bool here = b.split == nullptr || s.rank == b.split->rank();
  if (s.dedicated && here) s.thread_index = b.threads++;
  return s;
}
/// Whether the runner of settings `s` runs in this process.
inline bool runs_here(const builder& b, const runner_settings& s) noexcept {
  return b.split == nullptr || s.rank == b.split->rank();
}

}  // namespace troupe::detail
