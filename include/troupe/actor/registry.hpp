// registry.hpp: a name -> actor map owned by the actor_system, so that
// actors can find each other without passing handles around.
// A registered actor stays alive until erased (the registry holds a handle);
// the system clears the registry at shutdown.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "troupe/actor/actor.hpp"

namespace troupe {

class actor_registry {
 public:
  /// Registers (or replaces) `name`.
  void put(std::string name, actor a) {
    std::lock_guard<std::mutex> guard{mtx_};
    entries_[std::move(name)] = std::move(a);
  }
  /// The actor registered as `name`, or an empty handle.
  actor get(const std::string& name) const {
    std::lock_guard<std::mutex> guard{mtx_};
    auto it = entries_.find(name);
    return it == entries_.end() ? actor{} : it->second;
  }
  bool erase(const std::string& name) {
    std::lock_guard<std::mutex> guard{mtx_};
    return entries_.erase(name) > 0;
  }
  std::size_t size() const {
    std::lock_guard<std::mutex> guard{mtx_};
    return entries_.size();
  }
  void clear() {
    std::unordered_map<std::string, actor> old;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      old.swap(entries_);
    }
  }

 private:
  mutable std::mutex mtx_;
  std::unordered_map<std::string, actor> entries_;
};

}  // namespace troupe
