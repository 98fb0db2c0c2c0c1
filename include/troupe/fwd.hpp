// fwd.hpp: forward declarations of troupe's main types, for headers that
// only name them (pointers, references, declarations) and want to stay light.
// Include troupe.hpp (or the concept's own header) to use them.
#pragma once

#include <cstdint>

namespace troupe {

class actor;
class actor_cell;
class actor_system;
class behavior;
class blocking_actor;
struct config;
class error;
class event_actor;
class group;
class group_manager;
class actor_registry;
class local_actor;
class message;
class response_promise;
class scoped_actor;
class task_group;
class affinity;
class partition;

enum class errc : std::uint8_t;
enum class polling;
enum class priority : std::uint8_t;

template <class... Sigs>
class typed_actor;
template <class... Sigs>
class typed_behavior;
template <class T>
class spsc_ring;

using actor_ctx = event_actor;

}  // namespace troupe
