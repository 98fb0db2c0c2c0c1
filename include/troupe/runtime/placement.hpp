// placement.hpp: where work runs, one concept for actors, stream nodes and
// the map accelerator.
//   troupe::placement::pool()                 on the actor system's workers (default)
//   troupe::placement::own_thread()           each actor / node on a thread of its own
//   troupe::placement::own_thread("<2> <3>")  ... pinned: thread i to core group i mod 2
// Pool: any number of actors or nodes share the workers; an idle one costs
// no thread. Own thread: for work that must not share a core or that blocks
// (a node that waits on I/O, an actor with a latency budget); each costs a
// thread, and an idle one sleeps after a short spin. The core set is an
// affinity string (util/affinity.hpp); it is checked against the machine
// when the placement is used, and a bad one is an affinity_error.
// Across processes (a stream graph split with troupe::net::split), the same
// word says which process runs a part:
//   troupe::placement::ranks("0,1")          replica i of a farm on rank 0, 1, 0, ... (cycling)
//   troupe::placement::rank(1)               everything in it on rank 1
//   troupe::placement::own_thread("<2>").on_ranks("1")   both: rank 1, a pinned thread each
// A placement with ranks only keeps the thread placement around it.
// Cost: nothing at run time; it is read once when the work is placed.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace troupe {

class placement {
 public:
  /// The actor system's workers.
  static placement pool() { return placement{false, {}}; }
  /// A thread of its own for each actor or node placed so; `cores` pins the
  /// threads to core groups in turn ("" = not pinned).
  static placement own_thread(std::string cores = {}) { return placement{true, std::move(cores)}; }
  /// Runs on the ranks `r` of a graph split across processes: the i-th
  /// replica of a farm on r[i mod r.size()]. Throws std::invalid_argument
  /// for an empty list.
  static placement ranks(std::vector<std::size_t> r) { return unplaced().on_ranks(std::move(r)); }
  /// The same from text: "0,1,1" (ranks separated by commas; spaces allowed).
  /// Throws std::invalid_argument naming the bad part.
  static placement ranks(const std::string& text) { return unplaced().on_ranks(text); }
  static placement ranks(const char* text) { return ranks(std::string{text}); }
  static placement rank(std::size_t r) { return ranks(std::vector<std::size_t>{r}); }

  placement() = default;

  /// This placement, on ranks `r` (see ranks()).
  placement on_ranks(std::vector<std::size_t> r) const;
  placement on_ranks(const std::string& text) const;

  bool own_thread_each() const noexcept { return own_; }
  bool on_pool() const noexcept { return !own_; }
  /// Whether it says where threads run (pool or own thread), or only ranks.
  bool places_threads() const noexcept { return threads_; }
  /// The affinity string of the threads ("" = not pinned; pool: unused).
  const std::string& cores() const noexcept { return cores_; }
  /// The ranks it runs on (empty: not said).
  const std::vector<std::size_t>& rank_list() const noexcept { return ranks_; }
  /// "own_thread(<0>) on ranks 0,1", "pool", "ranks 1"
  std::string to_string() const;

  friend bool operator==(const placement&, const placement&) = default;

 private:
  placement(bool own, std::string cores) : own_{own}, threads_{true}, cores_{std::move(cores)} {}
  static placement unplaced() {
    placement p;
    p.threads_ = false;
    return p;
  }
  bool own_ = false;
  bool threads_ = true;
  std::string cores_;
  std::vector<std::size_t> ranks_;
};

}  // namespace troupe
