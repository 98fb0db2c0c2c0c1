// routing.hpp: how a farm picks the replica for an element; one policy per
// header (stream/routing/):
//   round_robin{}     replicas in turn (default)           any_replica
//   random_choice{}   a random replica                     any_replica
//   by_key{key_fn}    the same key always to the same replica
//   least_loaded{}    the replica with the fewest queued elements
//   broadcast{}       a copy to every replica
//   a callable (const T&, std::size_t n) -> std::size_t   (wrapped in routed_by)
//   a class with pick(const T&, std::size_t n)            (your own policy)
// A policy is a value the farm copies into every upstream replica, which
// routes straight into the replicas' channels: no router node, no shared
// counter, and the policy's pick() is called directly (inlined) per element.
// any_replica: when the picked replica's channel is full, the element may go
// to the next replica in turn that has room.
#pragma once

#include "troupe/stream/routing/broadcast.hpp"
#include "troupe/stream/routing/by_key.hpp"
#include "troupe/stream/routing/least_loaded.hpp"
#include "troupe/stream/routing/random_choice.hpp"
#include "troupe/stream/routing/round_robin.hpp"
#include "troupe/stream/routing/routed_by.hpp"
