// keyed_state.hpp: state by key, kept by the engine (in memory, or in a
// state backend such as RocksDB: troupe/rocksdb.hpp) and saved with every
// checkpoint. A node asks for it by name from on_start on:
//   struct counter : troupe::stream::node<std::string, void> {
//     troupe::stream::keyed_state<std::string, std::uint64_t>* counts = nullptr;
//     void on_start() { counts = &keyed<std::string, std::uint64_t>("counts"); }
//     void consume(std::string& w) { counts->update(w, [](std::uint64_t& n) { ++n; }); }
//   };
// Ask in on_start: a restarted graph fails, naming the state, if its node
// has not asked for every keyed state the checkpoint holds by the end of
// on_start. Put it behind a by-key farm (troupe::by_key): each replica then holds the
// keys routed to it. The node needs no snapshot/restore for it: a
// checkpoint saves every keyed state of every replica, and a restarted
// graph gives each replica's node its keyed states back, by name, when it
// asks for them again.
//
// Key groups. Every key falls in one of `key_groups` groups (a mix of its
// hash); by_key sends group g to replica g * replicas / key_groups, so each
// group belongs to exactly one replica whatever their number, and a
// checkpoint keeps each replica's state group by group (the unit a restore
// can hand to another replica).
//
// Backends. Without checkpoint_options::backend (or in a graph without
// checkpoints) a keyed state is a hash map in the node's memory: update()
// changes the value in place. With a backend, keys and values go to it as
// bytes (state_writer's encoding): every access encodes the key and reads,
// decodes, encodes and writes the value; K and V must be storable(). A
// checkpoint taken on the heap restores into a backend too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "troupe/stream/key_group.hpp"
#include "troupe/stream/state.hpp"

namespace troupe::stream {

/// One keyed state's table in a backend that stores bytes. Keys are
/// ordered by their bytes; every key starts with its key group (2 bytes,
/// big-endian), so a table is sorted by group.
class kv_table {
 public:
  virtual ~kv_table() = default;
  /// The value of `key` into `value`; false: there is none.
  virtual bool get(std::string_view key, std::string& value) = 0;
  virtual void put(std::string_view key, std::string_view value) = 0;
  virtual void erase(std::string_view key) = 0;
  /// One write of several keys (a value, or `erase`).
  struct change {
    std::string key, value;
    bool erase = false;
  };
  virtual void write(const std::vector<change>& changes) = 0;
  /// Every entry, in key order.
  virtual void scan(const std::function<void(std::string_view key, std::string_view value)>& f) = 0;
  /// Saves the table as it is now into the new directory `dir`; returns
  /// what restore() needs besides the directory (may be empty). May finish
  /// later (state_backend::wait_saved).
  virtual std::string checkpoint(const std::string& dir) = 0;

 protected:
  kv_table() = default;
  kv_table(const kv_table&) = default;
  kv_table& operator=(const kv_table&) = default;
};

/// Where keyed state lives (checkpoint_options::backend); errors throw
/// checkpoint_error naming the directory.
class state_backend {
 public:
  virtual ~state_backend() = default;
  /// For messages and statistics ("rocksdb").
  virtual std::string name() const = 0;
  /// How many keys each keyed state keeps decoded in memory in front of
  /// its table (0: none, every access goes to the table). Changed ones
  /// are written to the table together: at each checkpoint, before a
  /// scan, and when that many are held.
  virtual std::size_t cache_entries() const { return 0; }
  /// Returns once every table's checkpoint() called so far is on disk (the
  /// checkpointer's thread, before it writes the checkpoint's file); throws
  /// checkpoint_error if one failed. A backend that saves on the caller's
  /// thread has nothing to wait for.
  virtual void wait_saved() {}
  /// A new, empty table working in the directory `work` (which does not exist yet).
  virtual std::unique_ptr<kv_table> open(const std::string& work) = 0;
  /// A table as kv_table::checkpoint saved it in `dir` (with `saved`, what
  /// that returned), working in `work` (which does not exist yet); `dir`
  /// stays as it was.
  virtual std::unique_ptr<kv_table> restore(const std::string& work, const std::string& dir,
                                            std::string_view saved) = 0;

 protected:
  state_backend() = default;
  state_backend(const state_backend&) = default;
  state_backend& operator=(const state_backend&) = default;
};

namespace detail {

/// Where a node's keyed states save themselves (the engine's side).
struct keyed_env {
  state_backend* backend = nullptr;       // nullptr: on the heap
  std::string work;                       // backend: the node's working directory
  std::string dir;                        // the checkpoint directory, for paths relative to it
  std::size_t rank = 0, slot = 0;         // whose files
  std::size_t replica = 0, replicas = 1;  // the node's replica of its stage
  /// The checkpoint restored had another number of replicas of this stage:
  /// each restored keyed state gathers what every old replica kept and
  /// keeps the key groups that are this replica's (replica_of_group).
  bool rescaled = false;
};

/// Type-erased side of keyed_state (keyed_home keeps them).
class keyed_base {
 public:
  virtual ~keyed_base() = default;
  keyed_base(const keyed_base&) = delete;
  keyed_base& operator=(const keyed_base&) = delete;
  /// Writes the state for checkpoint `id` (its `index` among the node's).
  virtual void save(state_writer& out, std::uint64_t id, std::size_t index) = 0;
  /// The node has ended: a backend's table is closed (its files let go).
  virtual void close() noexcept = 0;

 protected:
  keyed_base() = default;
};

/// The key bytes a backend stores: 2 bytes of key group, big-endian, then
/// the key as state_writer writes it.
template <class K, class H>
void encode_key(std::string& out, const K& k, const H& hash) {
  const auto g = key_group(hash(k));
  out.clear();
  out.push_back(static_cast<char>(g >> 8));
  out.push_back(static_cast<char>(g & 0xFF));
  state_writer w{out};
  w.write(k);
}

/// The directory of a rank's backend files of checkpoint `id`, relative to
/// the checkpoint directory: chk-<id, 20 digits>.rank-<rank>.state.
std::string state_dir(std::uint64_t id, std::size_t rank);
/// Removes the directory `path` and what it holds (no error if it is not there).
void remove_dir(const std::string& path) noexcept;

}  // namespace detail

/// State by key of a node replica (see the top of this header). K needs
/// std::hash (or H); with a backend, K and V must be storable().
template <class K, class V, class H = std::hash<K>>
class keyed_state final : public detail::keyed_base {
 public:
  using key_type = K;
  using mapped_type = V;

  /// The value of k, if it has one.
  std::optional<V> get(const K& k) {
    if (!table_) {
      auto it = heap_.find(k);
      if (it == heap_.end()) return std::nullopt;
      return it->second;
    }
    if (cap_ != 0) {
      const auto& e = fetch(k);
      return e.present ? std::optional<V>{e.value} : std::nullopt;
    }
    detail::encode_key(key_, k, hash_);
    if (!table_->get(key_, value_)) return std::nullopt;
    return decode(value_);
  }
  bool contains(const K& k) {
    if (!table_) return heap_.find(k) != heap_.end();
    if (cap_ != 0) return fetch(k).present;
    detail::encode_key(key_, k, hash_);
    return table_->get(key_, value_);
  }
  void put(const K& k, V v) {
    if (!table_) {
      heap_.insert_or_assign(k, std::move(v));
      return;
    }
    if (cap_ != 0) {
      room();
      cache_.insert_or_assign(k, cached{std::move(v), true, true});
      return;
    }
    detail::encode_key(key_, k, hash_);
    store(v);
  }
  /// f(value) on k's value (a V{} if it had none), kept afterwards;
  /// returns what f returns (as a value).
  template <class F>
  auto update(const K& k, F&& f) {
    if (!table_) return std::invoke(f, heap_[k]);
    if (cap_ != 0) {
      auto& e = fetch(k);
      if (!e.present) e.value = V{};
      e.present = true;
      e.dirty = true;
      return std::invoke(f, e.value);
    }
    detail::encode_key(key_, k, hash_);
    V v{};
    if (table_->get(key_, value_)) v = decode(value_);
    if constexpr (std::is_void_v<std::invoke_result_t<F&, V&>>) {
      std::invoke(f, v);
      store(v);
    } else {
      auto r = std::invoke(f, v);
      store(v);
      return r;
    }
  }
  void erase(const K& k) {
    if (!table_) {
      heap_.erase(k);
      return;
    }
    if (cap_ != 0) {
      room();
      cache_.insert_or_assign(k, cached{V{}, false, true});
      return;
    }
    detail::encode_key(key_, k, hash_);
    table_->erase(key_);
  }
  /// f(key, value) for every entry (a backend: in key-group order).
  template <class F>
  void for_each(F&& f) {
    if (!table_) {
      for (const auto& [k, v] : heap_) std::invoke(f, k, v);
      return;
    }
    write_back();
    table_->scan([&](std::string_view kb, std::string_view vb) {
      K k{};
      state_reader kr{kb.substr(2), "keyed key"};
      kr.read(k);
      const V v = decode(vb);
      std::invoke(f, k, v);
    });
  }
  /// Entries (a backend: counted by a scan).
  std::size_t size() {
    if (!table_) return heap_.size();
    write_back();
    std::size_t n = 0;
    table_->scan([&](std::string_view, std::string_view) { ++n; });
    return n;
  }
  /// Whether it lives in a backend (else on the heap).
  bool in_backend() const noexcept { return table_ != nullptr; }

  // ---- the engine's side (keyed_home)

  explicit keyed_state(const detail::keyed_env& env) : env_{&env} {}

  /// Format: u8 kind (0: heap, 1: backend). Heap: u32 key_groups, u64
  /// groups that hold entries, then per group u32 group, u64 entries and
  /// each key and value. Backend: the table's directory relative to the
  /// checkpoint directory, and what its checkpoint() returned.
  void save(state_writer& out, std::uint64_t id, std::size_t index) override {
    if (!table_) {
      out.write(std::uint8_t{0});
      save_heap(out);
      return;
    }
    const auto rel =
        detail::state_dir(id, env_->rank) + "/slot-" + std::to_string(env_->slot) + "." + std::to_string(index);
    write_back();
    out.write(std::uint8_t{1});
    out.write(rel);
    out.write_bytes(table_->checkpoint(env_->dir + "/" + rel));
  }
  /// Takes the state as save() wrote it (`parts`: one, or one per old
  /// replica of a rescaled stage, of which it keeps its key groups): into
  /// the heap, or the backend (from either).
  void load(const std::vector<std::string>& parts, std::size_t index, const std::string& what) {
    const auto mine = [this](std::size_t g) {
      return !env_->rescaled || replica_of_group(g, env_->replicas) == env_->replica;
    };
    heap_.clear();
    for (std::size_t i = 0; i < parts.size(); ++i) {
      state_reader in{parts[i], what};
      const auto kind = in.read<std::uint8_t>();
      if (kind == 0) {
        open(index);  // a backend: the entries go straight into its table
        load_heap(in, [&](K& k, V& v, std::size_t g) {
          if (!mine(g)) return;
          if (table_) put(k, std::move(v));
          else heap_.insert_or_assign(std::move(k), std::move(v));
        });
      } else if (kind == 1) {
        const auto rel = in.read<std::string>();
        const auto saved = in.view_bytes();
        if (env_->backend == nullptr)
          in.fail(
              "a keyed state kept in a state backend, but this graph has none to restore it into; "
              "give checkpoint.backend the backend it ran with");
        if (parts.size() == 1 && !env_->rescaled) {
          table_ = env_->backend->restore(work(index), env_->dir + "/" + rel, saved);
          cap_ = env_->backend->cache_entries();
        } else {
          open(index);
          copy_groups(env_->dir + "/" + rel, saved, work(index) + ".part-" + std::to_string(i), mine);
        }
      } else {
        in.fail("an unknown keyed state kind " + std::to_string(kind));
      }
      if (in.left() != 0) in.fail("bytes after its end");
    }
    open(index);  // none restored into a backend: a new table
  }
  void close() noexcept override {
    cache_.clear();
    table_.reset();
  }
  /// A new table in the backend (none: stays on the heap).
  void open(std::size_t index) {
    if (env_->backend == nullptr || table_) return;
    table_ = env_->backend->open(work(index));
    cap_ = env_->backend->cache_entries();
  }

 private:
  /// A key held in front of the table: its value (present: it has one;
  /// dirty: the table does not have it yet).
  struct cached {
    V value{};
    bool present = false, dirty = false;
  };
  cached& fetch(const K& k) {
    if (auto it = cache_.find(k); it != cache_.end()) return it->second;
    room();
    detail::encode_key(key_, k, hash_);
    cached e;
    if (table_->get(key_, value_)) {
      e.value = decode(value_);
      e.present = true;
    }
    return cache_.emplace(k, std::move(e)).first->second;
  }
  /// Room for one more key in the cache: when it is full, what changed
  /// goes to the table and the cache starts empty.
  void room() {
    if (cache_.size() < cap_) return;
    write_back();
    cache_.clear();
  }
  /// The changed keys to the table, in one write.
  void write_back() {
    changes_.clear();
    for (auto& [k, e] : cache_) {
      if (!e.dirty) continue;
      kv_table::change c;
      detail::encode_key(c.key, k, hash_);
      if (e.present) {
        state_writer w{c.value};
        w.write(e.value);
      } else {
        c.erase = true;
      }
      changes_.push_back(std::move(c));
      e.dirty = false;
    }
    if (!changes_.empty()) table_->write(changes_);
  }
  std::string work(std::size_t index) const { return env_->work + "/" + std::to_string(index); }
  /// The entries of a table saved in `dir` whose key group is mine(g), into
  /// this one's (through a scratch table restored in `scratch`).
  template <class Mine>
  void copy_groups(const std::string& dir, std::string_view saved, const std::string& scratch, Mine&& mine) {
    {
      auto from = env_->backend->restore(scratch, dir, saved);
      changes_.clear();
      from->scan([&](std::string_view kb, std::string_view vb) {
        const auto g = kb.size() < 2 ? key_groups
                                     : (static_cast<std::size_t>(static_cast<unsigned char>(kb[0])) << 8) |
                                           static_cast<unsigned char>(kb[1]);
        if (g >= key_groups || !mine(g)) return;
        changes_.push_back({std::string{kb}, std::string{vb}});
        if (changes_.size() == 4096) {
          table_->write(changes_);
          changes_.clear();
        }
      });
      if (!changes_.empty()) table_->write(changes_);
    }
    detail::remove_dir(scratch);
  }
  V decode(std::string_view b) const {
    V v{};
    state_reader r{b, "keyed value"};
    r.read(v);
    return v;
  }
  void store(const V& v) {
    value_.clear();
    state_writer w{value_};
    w.write(v);
    table_->put(key_, value_);
  }
  void save_heap(state_writer& out) const {
    // Entries by key group: a counting sort over the groups.
    std::vector<std::uint32_t> count(key_groups + 1, 0);
    std::vector<std::uint32_t> group;
    group.reserve(heap_.size());
    for (const auto& e : heap_) {
      group.push_back(static_cast<std::uint32_t>(key_group(hash_(e.first))));
      ++count[group.back() + 1];
    }
    std::uint64_t used = 0;
    for (std::size_t g = 1; g <= key_groups; ++g) used += count[g] != 0 ? 1 : 0;
    for (std::size_t g = 1; g <= key_groups; ++g) count[g] += count[g - 1];
    std::vector<const typename decltype(heap_)::value_type*> order(heap_.size());
    auto at = count;
    std::size_t i = 0;
    for (const auto& e : heap_) order[at[group[i++]]++] = &e;
    out.write(static_cast<std::uint32_t>(key_groups));
    out.write(used);
    for (std::size_t g = 0; g < key_groups; ++g) {
      if (count[g + 1] == count[g]) continue;
      out.write(static_cast<std::uint32_t>(g));
      out.write(static_cast<std::uint64_t>(count[g + 1] - count[g]));
      for (auto j = count[g]; j < count[g + 1]; ++j) {
        out.write(order[j]->first);
        out.write(order[j]->second);
      }
    }
  }
  /// Reads save_heap's entries, each to `take(key, value, its group)`.
  template <class Take>
  static void load_heap(state_reader& in, Take&& take) {
    const auto groups = in.read<std::uint32_t>();
    if (groups != key_groups)
      in.fail("a keyed state in " + std::to_string(groups) + " key groups (this build has " +
              std::to_string(key_groups) + ")");
    for (auto used = in.read<std::uint64_t>(); used != 0; --used) {
      const auto g = in.read<std::uint32_t>();
      if (g >= key_groups) in.fail("key group " + std::to_string(g) + " out of range");
      for (auto n = in.read<std::uint64_t>(); n != 0; --n) {
        K k{};
        V v{};
        in.read(k);
        in.read(v);
        take(k, v, static_cast<std::size_t>(g));
      }
    }
  }

  std::unordered_map<K, V, H> heap_;
  std::unique_ptr<kv_table> table_;
  std::unordered_map<K, cached, H> cache_;  // a backend: keys in front of the table
  std::size_t cap_ = 0;                     // the cache's size (0: none)
  std::vector<kv_table::change> changes_;   // scratch for write_back
  const detail::keyed_env* env_;
  H hash_{};
  std::string key_, value_;  // scratch for a backend's bytes
};

namespace detail {

/// A node replica's keyed states (one per runner; node::keyed finds it
/// through the node's context).
class keyed_home {
 public:
  keyed_home() = default;
  keyed_home(const keyed_home&) = delete;
  keyed_home& operator=(const keyed_home&) = delete;

  /// Before the graph starts, for a graph with checkpoints: where states
  /// live and save their files.
  void bind(keyed_env env) { env_ = std::move(env); }
  const keyed_env& env() const noexcept { return env_; }

  /// The node's keyed state `name` (made, or restored, on first use).
  template <class K, class V, class H>
  keyed_state<K, V, H>& get(std::string_view name) {
    for (auto& s : states_) {
      if (s.name != name) continue;
      auto* p = dynamic_cast<keyed_state<K, V, H>*>(s.state.get());
      if (p == nullptr)
        throw std::logic_error{"troupe stream: keyed state '" + std::string{name} +
                               "' was asked for with two different key or value types"};
      return *p;
    }
    auto owned = std::make_unique<keyed_state<K, V, H>>(env_);
    auto& st = *owned;
    const auto index = states_.size();
    states_.push_back({std::string{name}, std::move(owned)});
    if (auto it = restored_.find(std::string{name}); it != restored_.end()) {
      st.load(it->second, index, "keyed state '" + std::string{name} + "'");
      restored_.erase(it);
    } else {
      st.open(index);
    }
    return st;
  }
  bool empty() const noexcept { return states_.empty(); }
  /// The node has ended: backends' tables close.
  void close() noexcept {
    for (auto& s : states_) s.state->close();
  }
  /// The names of restored states the node has not asked for ("" if none).
  std::string unclaimed() const {
    std::string names;
    for (const auto& r : restored_) names += (names.empty() ? "'" : ", '") + r.first + "'";
    return names;
  }
  /// u64 states, then per state its name and its bytes (keyed_state::save).
  void save(state_writer& out, std::uint64_t id) {
    out.write(static_cast<std::uint64_t>(states_.size()));
    std::string bytes;
    for (std::size_t i = 0; i < states_.size(); ++i) {
      out.write(states_[i].name);
      bytes.clear();
      state_writer w{bytes, id};
      states_[i].state->save(w, id, i);
      out.write_bytes(bytes);
    }
  }
  /// The states a checkpoint holds, taken by get() as the node asks (a
  /// name may come more than once: the parts of a rescaled stage's replicas).
  void load(state_reader& in) {
    for (auto n = in.read<std::uint64_t>(); n != 0; --n) {
      auto name = in.read<std::string>();
      restored_[name].push_back(in.read_bytes());
    }
  }

 private:
  struct entry {
    std::string name;
    std::unique_ptr<keyed_base> state;
  };
  keyed_env env_;
  std::vector<entry> states_;
  std::unordered_map<std::string, std::vector<std::string>> restored_;
};

}  // namespace detail

}  // namespace troupe::stream
