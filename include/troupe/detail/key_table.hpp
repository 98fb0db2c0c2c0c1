// layer: util
// key_table.hpp: the keyed state of the window nodes (stream/window.hpp): a
// hash map from Key to V with open addressing over a dense array of entries.
// The caller hashes a key once (hash()) and passes the hash to every lookup;
// an entry keeps its hash, so growing the table never hashes a key again.
// Entries are contiguous (iteration is a walk over an array); erasing moves
// the last entry into the hole (indices of other entries change).
// clear() keeps the memory for the next use: a table that is cleared and
// refilled (one per open window) allocates only while it grows.
// Not for: stable references across inserts or erases, iteration order.
// Cost: one hash per element; a lookup is a probe of 8-byte slots (32 bits
// of the hash beside the entry index, so a mismatch rarely reads the entry),
// load at most 1/2; an insert may grow the slots and the entries (amortised).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace troupe::detail {

template <class Key, class V, class Hash = std::hash<Key>>
class key_table {
 public:
  struct entry {
    Key key;
    V value;
    std::uint64_t hash;
  };

  /// The hash every lookup of `k` takes (Hash's, spread over 64 bits: the
  /// slot comes from the high bits).
  static std::uint64_t hash(const Key& k) {
    return (static_cast<std::uint64_t>(Hash{}(k)) ^ 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
  }

  /// The entry of `k` (hash h), made with `make()` if there is none.
  template <class Make>
  entry& find_or_insert(const Key& k, std::uint64_t h, Make&& make) {
    if ((entries_.size() + 1) * 2 > slots_.size()) grow();
    const std::uint32_t tag = tag_of(h);
    for (std::size_t i = h >> shift_;; i = (i + 1) & mask_) {
      const std::uint64_t s = slots_[i];
      if (s == 0) {
        entries_.push_back(entry{k, make(), h});
        slots_[i] = slot_of(tag, entries_.size() - 1);
        return entries_.back();
      }
      if (static_cast<std::uint32_t>(s >> 32) == tag) {
        entry& e = entries_[index_of(s)];
        if (e.key == k) return e;
      }
    }
  }

  /// The entry of `k` (hash h), or nullptr.
  entry* find(const Key& k, std::uint64_t h) noexcept {
    if (entries_.empty()) return nullptr;
    const std::uint32_t tag = tag_of(h);
    for (std::size_t i = h >> shift_;; i = (i + 1) & mask_) {
      const std::uint64_t s = slots_[i];
      if (s == 0) return nullptr;
      if (static_cast<std::uint32_t>(s >> 32) == tag) {
        entry& e = entries_[index_of(s)];
        if (e.key == k) return &e;
      }
    }
  }

  /// Removes entry i; the last entry takes its place.
  void erase_at(std::size_t i) {
    unlink(slot_pointing_to(i));
    const std::size_t last = entries_.size() - 1;
    if (i != last) {
      const std::size_t s = slot_pointing_to(last);
      slots_[s] = slot_of(tag_of(entries_[last].hash), i);
      entries_[i] = std::move(entries_[last]);
    }
    entries_.pop_back();
  }

  /// Empties the table and keeps its memory.
  void clear() noexcept {
    if (entries_.empty()) return;
    entries_.clear();
    std::fill(slots_.begin(), slots_.end(), 0);
  }

  std::size_t size() const noexcept { return entries_.size(); }
  bool empty() const noexcept { return entries_.empty(); }
  entry& operator[](std::size_t i) noexcept { return entries_[i]; }
  auto begin() noexcept { return entries_.begin(); }
  auto end() noexcept { return entries_.end(); }

 private:
  static std::uint32_t tag_of(std::uint64_t h) noexcept { return static_cast<std::uint32_t>(h >> 32) | 1u; }
  static std::uint64_t slot_of(std::uint32_t tag, std::size_t i) noexcept {
    return (std::uint64_t{tag} << 32) | static_cast<std::uint32_t>(i);
  }
  static std::size_t index_of(std::uint64_t s) noexcept { return static_cast<std::uint32_t>(s); }

  std::size_t slot_pointing_to(std::size_t i) const noexcept {
    const std::uint64_t want = slot_of(tag_of(entries_[i].hash), i);
    std::size_t s = entries_[i].hash >> shift_;
    while (slots_[s] != want) s = (s + 1) & mask_;
    return s;
  }
  // Linear probing's deletion: later slots of the same run move back.
  void unlink(std::size_t hole) noexcept {
    for (std::size_t j = (hole + 1) & mask_; slots_[j] != 0; j = (j + 1) & mask_) {
      const std::size_t home = entries_[index_of(slots_[j])].hash >> shift_;
      // j's entry may move to the hole if its home is not in (hole, j].
      if (((j - home) & mask_) >= ((j - hole) & mask_)) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = 0;
  }
  void grow() {
    const std::size_t n = slots_.empty() ? 16 : slots_.size() * 2;
    slots_.assign(n, 0);
    mask_ = n - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(n));
    for (std::size_t e = 0; e < entries_.size(); ++e) {
      std::size_t i = entries_[e].hash >> shift_;
      while (slots_[i] != 0) i = (i + 1) & mask_;
      slots_[i] = slot_of(tag_of(entries_[e].hash), e);
    }
  }

  // A slot: 0 (empty), or 32 bits of the entry's hash (never 0) and its index.
  std::vector<std::uint64_t> slots_;
  std::vector<entry> entries_;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
};

}  // namespace troupe::detail
