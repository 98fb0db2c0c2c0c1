// routing.hpp: how a farm picks the replica for an item.
//   round_robin{}          replicas in turn (default)
//   random_choice{}        a random replica
//   by_key{key_fn}         the same key always goes to the same replica
//   least_loaded{}         the replica with the shortest queue
//   broadcast{}            every replica gets a copy
//   any callable (const T&, std::size_t replicas) -> std::size_t   user-defined
// A farm's routing runs in the upstream stage itself (no router actor).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <random>
#include <type_traits>

namespace troupe {

class round_robin {
 public:
  template <class T>
  std::size_t operator()(const T&, std::size_t n) const noexcept {
    return next_->fetch_add(1, std::memory_order_relaxed) % n;
  }

 private:
  std::shared_ptr<std::atomic<std::size_t>> next_ = std::make_shared<std::atomic<std::size_t>>(0);
};

class random_choice {
 public:
  template <class T>
  std::size_t operator()(const T&, std::size_t n) const {
    thread_local std::minstd_rand rng{std::random_device{}()};
    return std::uniform_int_distribution<std::size_t>{0, n - 1}(rng);
  }
};

template <class KeyFn>
class by_key {
 public:
  explicit by_key(KeyFn key) : key_{std::move(key)} {}
  template <class T>
  std::size_t operator()(const T& item, std::size_t n) const {
    using key_type = std::decay_t<std::invoke_result_t<const KeyFn&, const T&>>;
    return std::hash<key_type>{}(std::invoke(key_, item)) % n;
  }

 private:
  KeyFn key_;
};

/// Marker: the farm sends to the replica whose entry queue is shortest.
struct least_loaded {};
/// Marker: the farm sends a copy to every replica.
struct broadcast {};

}  // namespace troupe
