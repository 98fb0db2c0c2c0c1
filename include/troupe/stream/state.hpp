// state.hpp: the state a stream node declares, so that checkpoints can save
// it and a restarted graph can restore it (stream/checkpoint.hpp).
//   struct counter : troupe::stream::node<std::string, void> {
//     std::map<std::string, std::uint64_t> counts;
//     void consume(std::string& w) { ++counts[w]; }
//     void snapshot(troupe::stream::state_writer& out) const { out.write(counts); }
//     void restore(troupe::stream::state_reader& in) { in.read(counts); }
//   };
// state_writer::write and state_reader::read take arithmetic and enum
// values, std::string, std::vector, std::deque, std::array, std::pair,
// std::tuple, std::optional, std::map, std::unordered_map, std::set,
// std::unordered_set, and any class with members
//   void save(state_writer&) const;  void load(state_reader&);
// (nested as deep as you like). Numbers are stored in this machine's byte
// order, at their own width: a checkpoint is read back by the same build on
// the same kind of machine. A read past the end of a node's state, or a
// length larger than what is left, throws checkpoint_error naming the node.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "troupe/util/exception.hpp"

namespace troupe::stream {

/// A checkpoint could not be written, read or restored: the message names
/// the file, the node or the setting (errc::checkpoint).
class checkpoint_error : public std::runtime_error, public troupe::exception {
 public:
  explicit checkpoint_error(const std::string& what) : std::runtime_error{what}, troupe::exception{errc::checkpoint} {}
};

class state_writer;
class state_reader;

namespace detail {
template <class T>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<std::pair<A, B>> : std::true_type {};
template <class T>
struct is_tuple : std::false_type {};
template <class... Ts>
struct is_tuple<std::tuple<Ts...>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};
/// A container read back by inserting its elements (maps and sets).
template <class T>
concept associative = requires { typename T::key_type; };
/// A sequence read back by appending (vector, deque, string).
template <class T>
concept sequence = !associative<T> && requires(T& c) {
  typename T::value_type;
  c.push_back(std::declval<typename T::value_type>());
  c.size();
};
}  // namespace detail

/// Where a node's snapshot() writes its state.
class state_writer {
 public:
  /// `checkpoint`: the id of the checkpoint being taken (0: the node's
  /// final state, after on_stop).
  explicit state_writer(std::string& out, std::uint64_t checkpoint = 0) noexcept
      : out_{&out}, checkpoint_{checkpoint} {}
  /// The checkpoint this state belongs to (0: the final state): a sink that
  /// pre-commits here commits when on_checkpoint_complete(id) comes.
  std::uint64_t checkpoint() const noexcept { return checkpoint_; }

  template <class T>
  void write(const T& v) {
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      out_->append(reinterpret_cast<const char*>(&v), sizeof v);
    } else if constexpr (std::is_same_v<T, std::string>) {
      write_size(v.size());
      out_->append(v);
    } else if constexpr (requires { v.save(*this); }) {
      v.save(*this);
    } else if constexpr (detail::is_pair<T>::value) {
      write(v.first);
      write(v.second);
    } else if constexpr (detail::is_tuple<T>::value) {
      std::apply([&](const auto&... x) { (this->write(x), ...); }, v);
    } else if constexpr (detail::is_optional<T>::value) {
      write(static_cast<std::uint8_t>(v.has_value() ? 1 : 0));
      if (v) write(*v);
    } else if constexpr (detail::is_std_array<T>::value) {
      for (const auto& x : v) write(x);
    } else if constexpr (detail::associative<T> || detail::sequence<T>) {
      write_size(v.size());
      if constexpr (std::is_arithmetic_v<typename T::value_type> && requires { v.data(); }) {
        out_->append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(typename T::value_type));
      } else {
        for (const auto& x : v) write(x);
      }
    } else {
      static_assert(sizeof(T) == 0,
                    "troupe::stream::state_writer: no way to write this type; give it "
                    "`void save(state_writer&) const` and `void load(state_reader&)`");
    }
  }
  /// Raw bytes (read back with state_reader::read_bytes).
  void write_bytes(std::string_view b) {
    write_size(b.size());
    out_->append(b);
  }
  std::size_t size() const noexcept { return out_->size(); }

 private:
  void write_size(std::size_t n) { write(static_cast<std::uint64_t>(n)); }
  std::string* out_;
  std::uint64_t checkpoint_;
};

/// Where a node's restore() reads its state from.
class state_reader {
 public:
  /// `what`: the node, for error messages.
  state_reader(std::string_view in, std::string what) noexcept : in_{in}, what_{std::move(what)} {}

  template <class T>
  void read(T& v) {
    if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      std::memcpy(&v, take(sizeof v), sizeof v);
    } else if constexpr (std::is_same_v<T, std::string>) {
      const auto n = read_size(1);
      v.assign(take(n), n);
    } else if constexpr (requires { v.load(*this); }) {
      v.load(*this);
    } else if constexpr (detail::is_pair<T>::value) {
      read(v.first);
      read(v.second);
    } else if constexpr (detail::is_tuple<T>::value) {
      std::apply([&](auto&... x) { (this->read(x), ...); }, v);
    } else if constexpr (detail::is_optional<T>::value) {
      std::uint8_t has = 0;
      read(has);
      if (has > 1) fail("a malformed optional");
      if (has == 0) {
        v.reset();
      } else {
        v.emplace();
        read(*v);
      }
    } else if constexpr (detail::is_std_array<T>::value) {
      for (auto& x : v) read(x);
    } else if constexpr (detail::associative<T>) {
      const auto n = read_size(1);
      v.clear();
      for (std::size_t i = 0; i < n; ++i) {
        if constexpr (requires { typename T::mapped_type; }) {
          typename T::key_type k{};
          typename T::mapped_type m{};
          read(k);
          read(m);
          v.emplace(std::move(k), std::move(m));
        } else {
          typename T::value_type x{};
          read(x);
          v.insert(std::move(x));
        }
      }
    } else if constexpr (detail::sequence<T>) {
      using V = typename T::value_type;
      const auto n = read_size(std::is_arithmetic_v<V> ? sizeof(V) : 1);
      v.clear();
      if constexpr (std::is_arithmetic_v<V> && requires { v.data(); }) {
        v.resize(n);
        std::memcpy(v.data(), take(n * sizeof(V)), n * sizeof(V));
      } else {
        for (std::size_t i = 0; i < n; ++i) {
          V x{};
          read(x);
          v.push_back(std::move(x));
        }
      }
    } else {
      static_assert(sizeof(T) == 0,
                    "troupe::stream::state_reader: no way to read this type; give it "
                    "`void save(state_writer&) const` and `void load(state_reader&)`");
    }
  }
  template <class T>
  T read() {
    T v{};
    read(v);
    return v;
  }
  std::string read_bytes() { return std::string{view_bytes()}; }
  /// The same, as a view into this reader's input (valid while that is).
  std::string_view view_bytes() {
    const auto n = read_size(1);
    return {take(n), n};
  }
  /// Bytes not read yet.
  std::size_t left() const noexcept { return in_.size() - at_; }
  /// Throws checkpoint_error naming the node and the state's position.
  [[noreturn]] void fail(std::string_view why) const {
    throw checkpoint_error{"troupe checkpoint: the state of " + what_ + " is malformed at byte " + std::to_string(at_) +
                           ": " + std::string{why}};
  }

 private:
  const char* take(std::size_t n) {
    if (n > left()) fail("it ends " + std::to_string(n - left()) + " byte(s) early");
    const char* p = in_.data() + at_;
    at_ += n;
    return p;
  }
  /// A length, each of whose items takes at least `item` bytes.
  std::size_t read_size(std::size_t item) {
    std::uint64_t n = 0;
    read(n);
    if (n > left() / item)
      fail("a length of " + std::to_string(n) + " with " + std::to_string(left()) + " byte(s) left");
    return static_cast<std::size_t>(n);
  }

  std::string_view in_;
  std::size_t at_ = 0;
  std::string what_;
};

/// Whether state_writer writes a T and state_reader reads it back (the
/// types listed at the top of this header, nested; a class with save/load
/// must also be default-constructible). Unaligned checkpoints keep the
/// elements a node takes before its barriers: only of such types.
template <class T>
constexpr bool storable() {
  if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_same_v<T, std::string>) {
    return true;
  } else if constexpr (requires(const T& c, T& m, state_writer& w, state_reader& r) {
                         c.save(w);
                         m.load(r);
                       }) {
    return std::is_default_constructible_v<T>;
  } else if constexpr (detail::is_pair<T>::value) {
    return storable<std::remove_const_t<typename T::first_type>>() && storable<typename T::second_type>();
  } else if constexpr (detail::is_tuple<T>::value) {
    return []<class... Ts>(std::tuple<Ts...>*) { return (storable<Ts>() && ...); }(static_cast<T*>(nullptr));
  } else if constexpr (detail::associative<T>) {
    if constexpr (requires { typename T::mapped_type; })
      return storable<typename T::key_type>() && storable<typename T::mapped_type>();
    else return storable<typename T::value_type>();
  } else if constexpr (detail::is_optional<T>::value || detail::is_std_array<T>::value || detail::sequence<T>) {
    return storable<typename T::value_type>();
  } else {
    return false;
  }
}

/// A node with state: snapshot() at each checkpoint (on the node's own
/// thread, between elements), restore() when the graph starts from one.
template <class N>
concept stateful = requires(N& n, state_writer& w, state_reader& r) {
  n.snapshot(w);
  n.restore(r);
};

/// A node that hears when a checkpoint has completed (every node's state is
/// stored): a sink that commits its pre-committed output then.
template <class N>
concept checkpoint_listener = requires(N& n, std::uint64_t id) { n.on_checkpoint_complete(id); };

}  // namespace troupe::stream
