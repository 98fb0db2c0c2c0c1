// layer: stream (ext: the seam for optional modules)
// edges.hpp: what a module needs to run one stream graph across processes
// on the one engine. The graph's edges between processes are runners of the
// core (detail/edge.hpp): a sender drains the channels of the local
// producers and sends batches, with credit, to an inlet actor in the other
// process; a receiver takes the batches from that inlet and pushes them
// into the channels of the local consumer. A module provides the rest:
//   - peers: this process's rank, and a directory of inlet actors, so that a
//     sender finds the inlet of the replica it feeds (troupe::net::cluster);
//   - a codec for the messages below, so that they cross the wire
//     (troupe::net registers them for every element type of the graph).
// The messages, all to or from actors (a sender's credit actor, an inlet):
//   edge_open,   lane, credit actor        sender -> inlet   (the inlet grants `window`)
//   edge_data,   lane, batch<E>            sender -> inlet
//   edge_mark,   lane, watermark           sender -> inlet   (after the data before it)
//   edge_barrier, lane, checkpoint id      sender -> inlet   (after the data before it)
//   edge_end,    lane, count sent          sender -> inlet
//   edge_credit, lane, granted, consumed   inlet  -> credit actor
// A lane is one producer replica's stream into one consumer replica (a local
// graph's channel): order, watermarks and end of stream are per lane.
// Failures: each side monitors the other's actor; a down message with an
// error (a lost peer, an aborted part) fails the graph, naming the peer.
// Checkpoints (stream/checkpoint.hpp): barriers cross with the lanes; rank
// 0's checkpointer coordinates the others' through an actor of each, found
// as "<graph name>/checkpoints" on rank 0:
//   checkpoint_hello,    rank, actor       rank r -> rank 0  (its checkpointer)
//   checkpoint_trigger,  id                rank 0 -> rank r  (start checkpoint id)
//   checkpoint_done,     rank, id          rank r -> rank 0  (its part of id is on disk)
//   checkpoint_complete, id                rank 0 -> rank r  (id is complete)
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "troupe/actor/actor.hpp"
#include "troupe/detail/tagged.hpp"

namespace troupe::ext {

/// Sizes of the edges between processes (the same in every process).
struct edge_config {
  std::size_t batch = 1024;                   ///< elements per message
  std::chrono::microseconds max_delay{1000};  ///< a partial batch waits at most this long
  /// Credit per lane: what may be in flight between a producer and its
  /// remote consumer. It must cover what flows during a grant's round trip;
  /// on a loaded machine that trip includes scheduling delays of
  /// milliseconds (docs/performance.md, "Remote streams"). In elements when
  /// `window` is set (>= batch); otherwise `window_bytes` of the elements'
  /// own size (sizeof, so a string's characters are not counted), and at
  /// least 4 batches: 262144 24-byte tuples, 32768 192-byte ones.
  std::size_t window = 0;
  std::size_t window_bytes = std::size_t{6} << 20;

  /// The window of a lane of element type E, in elements.
  template <class E>
  std::size_t window_of() const noexcept {
    if (window != 0) return window;
    const std::size_t n = window_bytes / sizeof(E);
    return n > 4 * batch ? n : 4 * batch;
  }
};

/// The processes of a split graph, as this process sees them.
class peers {
 public:
  virtual ~peers() = default;
  virtual std::size_t rank() const noexcept = 0;
  virtual std::size_t size() const noexcept = 0;
  /// "rank 1 (tcp://127.0.0.1:7001)": for errors.
  virtual std::string describe(std::size_t rank) const = 0;
  /// Makes an inlet findable by every process under `name`.
  virtual void publish(const actor& inlet, const std::string& name) = 0;
  /// The inlet `name` of `rank`; may block up to connect_timeout() (peers
  /// start in any order) and throws an exception naming both then.
  virtual actor find(std::size_t rank, const std::string& name) = 0;
  /// How long a receiver waits for its senders to open their lanes.
  virtual std::chrono::milliseconds connect_timeout() const noexcept = 0;
};

/// What an edge carries inside an ordered farm: the element with its
/// position in the farm's input (`seq`, `last`; ordered_farm's reorder stage
/// puts them back in order). `reply` is empty across processes: only graphs
/// from sources to sinks are split.
template <class T>
using sequenced = detail::tagged<T>;

// The atoms of the messages above.
struct edge_open {};
struct edge_data {};
struct edge_mark {};
struct edge_end {};
struct edge_credit {};
struct edge_barrier {};
struct checkpoint_hello {};
struct checkpoint_trigger {};
struct checkpoint_done {};
struct checkpoint_complete {};

/// Buffers of element type T that the edges of this process reuse: a
/// sender fills one per message, a module's decoder takes one for a batch
/// that comes in, and a batch gives its buffer back when it is destroyed
/// (wherever that is). Without the pool every batch was a malloc in one
/// thread and a free in another, and glibc kept returning the freed memory
/// to the kernel and faulting it in again (docs/performance.md).
template <class T>
class batch_pool {
 public:
  static batch_pool& get() {
    static auto* pool = new batch_pool;  // never destroyed: a batch may die during static destruction
    return *pool;
  }
  /// An empty buffer, with the capacity it had (or none).
  std::vector<T> take() {
    std::lock_guard<std::mutex> g{mtx_};
    if (free_.empty()) return {};
    std::vector<T> v = std::move(free_.back());
    free_.pop_back();
    return v;
  }
  /// Keeps v's buffer (up to `keep` of them); v is left without one.
  void give(std::vector<T>& v) noexcept {
    if (v.capacity() == 0) return;
    v.clear();
    std::lock_guard<std::mutex> g{mtx_};
    if (free_.size() >= keep) return;
    try {
      free_.push_back(std::move(v));
    } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory: v frees its buffer itself
    }
  }
  std::size_t kept() {
    std::lock_guard<std::mutex> g{mtx_};
    return free_.size();
  }

 private:
  batch_pool() = default;
  static constexpr std::size_t keep = 64;
  std::mutex mtx_;
  std::vector<std::vector<T>> free_;
};

/// The elements of one edge_data message, in a buffer from batch_pool<T>.
/// On the wire it is a vector<T>.
template <class T>
struct batch {
  std::vector<T> items;

  batch() : items{batch_pool<T>::get().take()} {}
  batch(const batch& o) : batch{} { items = o.items; }
  batch(batch&& o) noexcept : items{std::move(o.items)} {}
  batch& operator=(const batch& o) {
    items = o.items;
    return *this;
  }
  batch& operator=(batch&& o) noexcept {
    items.swap(o.items);  // o gives our old buffer back
    return *this;
  }
  ~batch() { batch_pool<T>::get().give(items); }
};

}  // namespace troupe::ext
