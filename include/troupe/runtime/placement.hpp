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
// Cost: nothing at run time; it is read once when the work is placed.
#pragma once

#include <string>
#include <utility>

namespace troupe {

class placement {
 public:
  /// The actor system's workers.
  static placement pool() { return placement{false, {}}; }
  /// A thread of its own for each actor or node placed so; `cores` pins the
  /// threads to core groups in turn ("" = not pinned).
  static placement own_thread(std::string cores = {}) { return placement{true, std::move(cores)}; }

  placement() = default;

  bool own_thread_each() const noexcept { return own_; }
  bool on_pool() const noexcept { return !own_; }
  /// The affinity string of the threads ("" = not pinned; pool: unused).
  const std::string& cores() const noexcept { return cores_; }

  friend bool operator==(const placement&, const placement&) = default;

 private:
  placement(bool own, std::string cores) : own_{own}, cores_{std::move(cores)} {}
  bool own_ = false;
  std::string cores_;
};

}  // namespace troupe
