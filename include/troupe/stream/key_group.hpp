// key_group.hpp: key groups, the unit by which keyed state is routed and
// saved (stream/keyed_state.hpp). Every key falls in one of key_groups
// groups; by_key sends group g to replica replica_of_group(g, replicas), so
// each group belongs to one replica whatever their number.
#pragma once

#include <cstddef>
#include <cstdint>

namespace troupe::stream {

/// How many key groups keys fall into (the most replicas a by-key farm can
/// spread its keys over).
inline constexpr std::size_t key_groups = 1024;

/// The key group of a key whose hash is `h` (0 .. key_groups - 1): the top
/// bits of h times a 64-bit odd constant (Fibonacci hashing), so that
/// identity hashes of integers spread too.
constexpr std::size_t key_group(std::size_t h) noexcept {
  static_assert(sizeof(std::size_t) == 8, "key groups are defined for 64-bit hashes");
  constexpr int bits = 10;  // log2(key_groups)
  static_assert((std::size_t{1} << bits) == key_groups);
  return static_cast<std::size_t>((static_cast<std::uint64_t>(h) * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

/// The replica (of `replicas`) that key group `g` belongs to.
constexpr std::size_t replica_of_group(std::size_t g, std::size_t replicas) noexcept {
  return g * replicas / key_groups;
}

}  // namespace troupe::stream
