// The registries of type names and message types (process-wide: every node
// of the process reads the same ones).
#include "troupe/net/codec.hpp"

#include <atomic>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace troupe::net::detail {
namespace {

struct registry {
  std::shared_mutex mtx;
  std::unordered_map<const void*, std::string> names;
  std::deque<message_type> types;  // stable addresses
  std::unordered_map<const void*, const message_type*> by_id;
  std::unordered_map<std::uint64_t, const message_type*> by_hash;
  std::atomic<std::size_t> count{0};  ///< types.size(), readable without the lock
};

registry& reg() {
  static registry* r = [] {
    auto* p = new registry;  // never destroyed: nodes may outlive static destruction order
    return p;
  }();
  return *r;
}

// The runtime's own messages always cross (registered on first use of the
// registry's readers, whatever the order of static initialisation).
void ensure_builtins() {
  static const bool done = [] {
    add_message<>();
    add_message<error>();
    add_message<down_msg>();
    add_message<exit_msg>();
    add_message<ext::kill_msg>();
    return true;
  }();
  (void)done;
}

}  // namespace

std::uint64_t name_hash(const std::string& name) noexcept {
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h == 0 ? 1 : h;
}

void add_user_type_name(const void* key, const char* cpp_name, const std::string& name) {
  if (name.empty()) throw std::invalid_argument(std::string{"troupe::net::add_type: empty name for "} + cpp_name);
  auto& r = reg();
  std::unique_lock lock{r.mtx};
  auto [it, fresh] = r.names.emplace(key, name);
  if (!fresh && it->second != name)
    throw std::logic_error("troupe::net::add_type: type already named '" + it->second + "', not '" + name + "'");
}

std::string readable_type_name(const char* mangled) {
  std::string out = ext::demangle(mangled);
  constexpr std::string_view tuple = "std::tuple<";
  if (out.starts_with(tuple) && out.ends_with('>')) out = out.substr(tuple.size(), out.size() - tuple.size() - 1);
  return out;
}

const std::string& user_type_name(const void* key, const char* cpp_name) {
  auto& r = reg();
  std::shared_lock lock{r.mtx};
  auto it = r.names.find(key);
  if (it == r.names.end())
    throw std::logic_error("troupe::net: the type " + readable_type_name(cpp_name) +
                           " has no network name: call troupe::net::add_type<T>(\"name\") first");
  return it->second;
}

const message_type& register_message(message_type t) {
  auto& r = reg();
  std::unique_lock lock{r.mtx};
  if (auto it = r.by_hash.find(t.hash); it != r.by_hash.end()) {
    if (it->second->name != t.name)
      throw std::logic_error("troupe::net: message types '" + it->second->name + "' and '" + t.name +
                             "' have the same name hash; rename a type");
    if (it->second->type_id != t.type_id)
      throw std::logic_error("troupe::net: two different C++ types are both named '" + t.name + "'");
    return *it->second;
  }
  t.index = r.types.size();
  auto& stored = r.types.emplace_back(std::move(t));
  r.by_id[stored.type_id] = &stored;
  r.by_hash[stored.hash] = &stored;
  r.count.store(r.types.size(), std::memory_order_release);
  return stored;
}

const message_type* find_message(const void* type_id) noexcept {
  ensure_builtins();
  auto& r = reg();
  std::shared_lock lock{r.mtx};
  auto it = r.by_id.find(type_id);
  return it == r.by_id.end() ? nullptr : it->second;
}

const message_type* find_message(std::uint64_t hash) noexcept {
  ensure_builtins();
  auto& r = reg();
  std::shared_lock lock{r.mtx};
  auto it = r.by_hash.find(hash);
  return it == r.by_hash.end() ? nullptr : it->second;
}

std::size_t registered_count() noexcept {
  ensure_builtins();
  return reg().count.load(std::memory_order_acquire);
}

std::vector<std::uint64_t> registered_hashes(std::size_t from, std::size_t to) {
  auto& r = reg();
  std::shared_lock lock{r.mtx};
  std::vector<std::uint64_t> out;
  for (std::size_t i = from; i < to && i < r.types.size(); ++i) out.push_back(r.types[i].hash);
  return out;
}

}  // namespace troupe::net::detail
