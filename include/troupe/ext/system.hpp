// layer: actor (ext: the seam for optional modules)
// system.hpp: what a module registers with, and reports to, the actor system
// it serves: a shutdown client (work with a thread of its own, such as a
// network node's I/O thread, that the system must see end before it stops),
// and its dead letters (messages it could not deliver), so that the system's
// count includes them.
//   class io final : public troupe::ext::shutdown_client {
//     void cancel_for_shutdown() noexcept override { stop_soon(); }  // system's thread
//   };
//   if (!troupe::ext::register_shutdown_client(sys, &my_io))
//     throw ...;                                   // the system is stopping already
//   ...on the module's own close:
//   troupe::ext::unregister_shutdown_client(sys, &my_io);
//   troupe::ext::count_dead_letter(sys);           // a message that could not go
// At shutdown, after the actors have ended, the system gives a client a short
// grace period to finish on its own (detail/tuning.hpp), then calls
// cancel_for_shutdown() (holding the system's clients' lock: do not
// unregister from inside it, do that from another thread), and waits until
// the client has unregistered.
// Cost: inline calls of the core's own entry points.
#pragma once

#include "troupe/actor/actor_system.hpp"
#include "troupe/detail/system_access.hpp"

namespace troupe::ext {

/// Work the actor system waits for at shutdown (see above).
using shutdown_client = detail::shutdown_client;

/// false: the system is shutting down and takes no more (stop at once).
[[nodiscard]] inline bool register_shutdown_client(actor_system& sys, shutdown_client* c) {
  return detail::system_access::register_client(sys, c);
}
/// The client has finished: the system no longer waits for it.
inline void unregister_shutdown_client(actor_system& sys, shutdown_client* c) noexcept {
  detail::system_access::unregister_client(sys, c);
}

/// A message the module could not deliver (counted with the system's dead letters).
inline void count_dead_letter(actor_system& sys) noexcept { detail::system_access::count_dead_letter(sys); }

}  // namespace troupe::ext
