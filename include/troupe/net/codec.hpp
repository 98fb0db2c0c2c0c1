// codec.hpp: how the values of a message are written for another process.
// A message may cross the network once its types are registered:
//   troupe::net::add_type<point>("point");            // a user type, once
//   troupe::net::add_message<put_atom, std::string, point>();
// (typed actors register their whole interface when published or looked up).
// How each value is written (docs/net.md, "Wire safety"):
//   - arithmetic and enum values: their bytes; a bool is checked on reading
//     (0 or 1), and an enum whose valid values are declared
//     (troupe::net::enum_values) is checked against them;
//   - empty types (atoms): nothing;
//   - std::string, std::vector<T>: a 32-bit length, then the elements
//     (their bytes in one copy when T is arithmetic, an unchecked enum or a
//     raw_bytes type); std::array<T, N> and T[N]: the N elements;
//   - actor and typed_actor handles: the node and actor they name; they
//     become proxies on the receiving node (named "actor", and a typed one
//     "actor{<its signatures>}");
//   - troupe::error, down_msg, exit_msg: built in;
//   - a struct with a member `auto fields() { return std::tie(a, b, ...); }`:
//     its fields in that order, each as above, never its padding (no
//     dependency on troupe::net in the type's header); its network name
//     lists its fields' types ("point{f64,f64}"), so nodes that disagree on
//     the fields see two different types;
//   - any type with a cereal serialize()/save()/load() template: through
//     cereal's binary format, every length checked against the bytes left, every
//     bool checked;
//   - a trivially copyable type whose memory may cross as it is, by explicit
//     opt-in only (troupe::net::raw_bytes): its bytes, padding included; its
//     network name holds its size, alignment and a version the user gives,
//     so a change of layout is a different type.
// Any other type does not compile (a static_assert that says what to do).
// Types are named by the registered names, and a message type by the names
// of its values ("put_atom,string,point{f64,f64}"); nodes compare the
// 64-bit hashes of these names, never C++ type identities.
// Decoding checks every length against the bytes that are there, before it
// allocates: a truncated or malformed message throws decode_error naming the
// type (counted by the node, never a crash). Cost: one lookup per message,
// then plain copies.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <ostream>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include <cereal/archives/binary.hpp>

#include "troupe/ext/messages.hpp"
#include "troupe/net/errors.hpp"
#include "troupe/troupe.hpp"
#include "troupe/util/exception.hpp"

namespace troupe::net {

/// A value read from the network did not have the expected shape
/// (troupe::exception with net_errc::malformed_message).
class decode_error : public std::runtime_error, public troupe::exception {
 public:
  explicit decode_error(const std::string& what)
      : std::runtime_error{what}, troupe::exception{net_errc::malformed_message} {}
  explicit decode_error(const char* what) : std::runtime_error{what}, troupe::exception{net_errc::malformed_message} {}
};

class writer;
class reader;

namespace detail {
/// Writes and reads actor handles: the node's business (proxies, exports).
class handle_context {
 public:
  virtual void write_actor(writer& w, const actor& a) = 0;
  virtual actor read_actor(reader& r) = 0;

 protected:
  ~handle_context() = default;
};
}  // namespace detail

/// Appends bytes to a buffer.
class writer {
 public:
  writer(std::string& out, detail::handle_context* ctx) noexcept : out_{&out}, ctx_{ctx} {}
  void bytes(const void* p, std::size_t n) { out_->append(static_cast<const char*>(p), n); }
  template <class T>
  void raw(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&v, sizeof(T));
  }
  detail::handle_context* context() const noexcept { return ctx_; }
  std::string& buffer() noexcept { return *out_; }

 private:
  std::string* out_;
  detail::handle_context* ctx_;
};

/// Reads bytes from [begin, end); every read is checked.
class reader {
 public:
  reader(const char* begin, const char* end, detail::handle_context* ctx) noexcept
      : pos_{begin}, begin_{begin}, end_{end}, ctx_{ctx} {}
  std::size_t left() const noexcept { return static_cast<std::size_t>(end_ - pos_); }
  std::size_t offset() const noexcept { return static_cast<std::size_t>(pos_ - begin_); }
  const char* take(std::size_t n, const char* what) {
    if (n > left())
      throw decode_error(std::string{"truncated "} + what + ": needs " + std::to_string(n) + " bytes at offset " +
                         std::to_string(offset()) + ", " + std::to_string(left()) + " left");
    const char* p = pos_;
    pos_ += n;
    return p;
  }
  template <class T>
  T raw(const char* what) {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }
  /// A 32-bit count of elements of at least `min_size` bytes each (checked
  /// against what is left, so that no length makes us allocate beyond it).
  std::size_t count(std::size_t min_size, const char* what) {
    auto n = raw<std::uint32_t>(what);
    if (min_size > 0 && n > left() / min_size)
      throw decode_error(std::string{what} + ": length " + std::to_string(n) + " exceeds the " +
                         std::to_string(left()) + " bytes left");
    return n;
  }
  void expect_end(const char* what) const {
    if (pos_ != end_)
      throw decode_error(std::string{what} + ": " + std::to_string(left()) + " bytes left over after the values");
  }
  detail::handle_context* context() const noexcept { return ctx_; }

 private:
  const char* pos_;
  const char* begin_;
  const char* end_;
  detail::handle_context* ctx_;
};

/// Opt-in: T crosses the network as its bytes, as they are in memory. Only
/// for a trivially copyable type without pointers whose every byte pattern is
/// a valid value (no bool, no enum with a checked range: their bytes are not
/// checked), sent between builds that agree on its layout. Specialise it
/// with a version, and raise the version whenever the type changes in a way
/// its size and alignment do not show (a field reordered, an int made a
/// float):
///   template <> struct troupe::net::raw_bytes<sample> { static constexpr std::uint32_t version = 1; };
/// The network name is then "<add_type name>@raw<size>a<alignment>v<version>"
/// (sample@raw24a8v1). Without this, a struct crosses field by field
/// (fields()) or through cereal, and otherwise does not compile.
template <class T>
struct raw_bytes {};

/// Declares which values of the enum E are valid, so that a value read from
/// the network is checked (decode_error naming the type otherwise). Either a
/// contiguous range,
///   template <> struct troupe::net::enum_values<color> {
///     static constexpr color first = color::red, last = color::blue;
///   };
/// or any test: `static constexpr bool valid(color c) { ... }`. An enum
/// without it crosses as its underlying integer, unchecked.
template <class E>
struct enum_values {};

namespace detail {

/// Registered names of user types (add_type), keyed by the address of a
/// per-type object (not by std::type_info, whose comparison conflates types
/// of different anonymous namespaces under some compilers); throws naming
/// the type when there is none.
const std::string& user_type_name(const void* key, const char* cpp_name);
/// A C++ type as the compiler writes it ("point"; a message's std::tuple<...>
/// without the tuple), from typeid's name: for errors about unnamed types.
std::string readable_type_name(const char* mangled);
void add_user_type_name(const void* key, const char* cpp_name, const std::string& name);

/// T lists its fields: `auto fields() { return std::tie(...); }`.
template <class T>
concept fields_type = std::is_class_v<T> && requires(T& v) { std::tuple_size<decltype(v.fields())>::value; };

/// T opted in to cross as its bytes (raw_bytes).
template <class T>
concept raw_type = requires {
  { raw_bytes<T>::version } -> std::convertible_to<std::uint32_t>;
};

/// E declares its valid values (enum_values).
template <class E>
concept range_enum = std::is_enum_v<E> && requires {
  { enum_values<E>::first } -> std::convertible_to<E>;
  { enum_values<E>::last } -> std::convertible_to<E>;
};
template <class E>
concept tested_enum = std::is_enum_v<E> && requires(E e) {
  { enum_values<E>::valid(e) } -> std::convertible_to<bool>;
};
template <class E>
concept checked_enum = range_enum<E> || tested_enum<E>;

template <class E>
bool enum_value_ok(E v) noexcept {
  if constexpr (tested_enum<E>) {
    return enum_values<E>::valid(v);
  } else {
    using U = std::underlying_type_t<E>;
    const auto u = static_cast<U>(v);
    return u >= static_cast<U>(enum_values<E>::first) && u <= static_cast<U>(enum_values<E>::last);
  }
}

/// A bool read from the wire: its byte, which must be 0 or 1.
inline bool checked_bool(std::uint8_t b) {
  if (b > 1) throw decode_error("bool holds " + std::to_string(b) + " (a bool is 0 or 1)");
  return b != 0;
}

/// Elements whose bytes may be copied as one block: every byte pattern is a
/// value (arithmetic but bool, an enum without declared values), or the type
/// opted in (raw_bytes).
template <class E>
inline constexpr bool bulk_element =
    (std::is_arithmetic_v<E> && !std::is_same_v<E, bool>) || (std::is_enum_v<E> && !checked_enum<E>) || raw_type<E>;

/// cereal's binary archive reading from our buffers (the format of
/// cereal::BinaryOutputArchive), with every length cereal reads (a string's,
/// a container's) checked against the bytes left before cereal allocates
/// for it: a length of 8 EB is refused, not attempted. Elements take at
/// least a byte each here, so a container of empty types (which cereal
/// writes as nothing) may hold no more elements than there are bytes left.
class cereal_reader : public cereal::InputArchive<cereal_reader, cereal::AllowEmptyClassElision> {
 public:
  cereal_reader(const char* begin, const char* end) : InputArchive{this}, pos_{begin}, end_{end} {}
  void load_bytes(void* data, std::size_t n) {
    if (n > left())
      throw decode_error("cereal value truncated: needs " + std::to_string(n) + " bytes, " + std::to_string(left()) +
                         " left");
    if (n == 0) return;  // an empty vector's data() may be null
    std::memcpy(data, pos_, n);
    pos_ += n;
  }
  void check_length(std::uint64_t n) const {
    if (n > left())
      throw decode_error("cereal length " + std::to_string(n) + " exceeds the " + std::to_string(left()) +
                         " bytes left");
  }
  std::size_t left() const noexcept { return static_cast<std::size_t>(end_ - pos_); }

 private:
  const char* pos_;
  const char* end_;
};

template <class T>
  requires std::is_arithmetic_v<T>
void CEREAL_LOAD_FUNCTION_NAME(cereal_reader& ar, T& t) {
  if constexpr (std::is_same_v<T, bool>) {  // one byte, 0 or 1, as codec<bool> reads it
    std::uint8_t b = 0;
    ar.load_bytes(&b, 1);
    t = checked_bool(b);
  } else {
    ar.load_bytes(std::addressof(t), sizeof(t));
  }
}
template <class T>
void CEREAL_LOAD_FUNCTION_NAME(cereal_reader& ar, cereal::BinaryData<T>& bd) {
  ar.load_bytes(bd.data, static_cast<std::size_t>(bd.size));
}
template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(cereal_reader& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}
template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(cereal_reader& ar, cereal::SizeTag<T>& t) {
  ar(t.size);
  ar.check_length(static_cast<std::uint64_t>(t.size));
}

template <class T>
concept cereal_type =
    std::is_class_v<T> && cereal::traits::is_output_serializable<T, cereal::BinaryOutputArchive>::value &&
    cereal::traits::is_input_serializable<T, cereal_reader>::value;

/// std::streambuf appending to our buffers, for cereal's output archive.
class out_buf : public std::streambuf {
 public:
  explicit out_buf(std::string& s) : s_{&s} {}

 protected:
  std::streamsize xsputn(const char* p, std::streamsize n) override {
    s_->append(p, static_cast<std::size_t>(n));
    return n;
  }
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) s_->push_back(static_cast<char>(c));
    return c;
  }

 private:
  std::string* s_;
};

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
/// std::array<E, N> and E[N]: N elements of E.
template <class T>
struct fixed_array {
  static constexpr bool value = false;
};
template <class E, std::size_t N>
struct fixed_array<std::array<E, N>> {
  static constexpr bool value = true;
  using element = E;
  static constexpr std::size_t size = N;
};
template <class E, std::size_t N>
struct fixed_array<E[N]> {
  static constexpr bool value = true;
  using element = E;
  static constexpr std::size_t size = N;
};
template <class T>
struct is_typed_handle : std::false_type {};
template <class... Sigs>
struct is_typed_handle<typed_actor<Sigs...>> : std::true_type {};
template <class T>
inline constexpr bool always_false = false;

template <class Sig>
std::string signature_name();
template <class... Sigs>
std::uint64_t add_interface(typed_actor<Sigs...>*);
/// A typed handle's network name: "actor{" its signatures "}", so that
/// handles of different interfaces, and untyped ones ("actor"), are
/// different message types.
template <class... Sigs>
std::string typed_handle_name(typed_actor<Sigs...>*) {
  std::string s = "actor{";
  ((s += signature_name<Sigs>(), s += ';'), ...);
  if (s.back() == ';') s.pop_back();
  return s + "}";
}

/// The types of T's fields (fields_type), as a tuple of plain types.
template <class Tuple>
struct plain_types;
template <class... Fs>
struct plain_types<std::tuple<Fs...>> {
  using type = std::tuple<std::remove_cvref_t<Fs>...>;
};
template <class T>
using field_types = typename plain_types<decltype(std::declval<T&>().fields())>::type;

/// A fields type whose listed fields are, in order, all of its bytes (no
/// padding, nothing unlisted), each of a type whose bytes are its value: its
/// wire form (the fields in order) is then its memory, and it is copied
/// whole, alone or as a vector's elements (a split graph's batch of tuples
/// in one copy). packable() is what the compiler knows; packed() adds the
/// order of the fields in memory, measured once on a default-made value.
template <class T>
constexpr bool packable() {
  if constexpr (!fields_type<T> || raw_type<T> || !std::is_trivially_copyable_v<T> ||
                !std::is_default_constructible_v<T>)
    return false;
  else
    return []<class... Fs>(std::tuple<Fs...>*) {
      return sizeof...(Fs) > 0 && (bulk_element<Fs> && ...) && (sizeof(Fs) + ... + 0) == sizeof(T);
    }(static_cast<field_types<T>*>(nullptr));
}
template <class T>
bool packed() {
  if constexpr (!packable<T>()) {
    return false;
  } else {
    static const bool in_order = [] {
      T v{};
      const auto* base = reinterpret_cast<const char*>(&v);  // NOLINT(cppcoreguidelines-pro-type-reinterpret-cast)
      std::size_t at = 0;
      bool ok = true;
      std::apply(
          [&](auto&... f) {
            // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): offsets of the fields
            ((ok = ok && reinterpret_cast<const char*>(&f) == base + at, at += sizeof(f)), ...);
          },
          v.fields());
      return ok;
    }();
    return in_order;
  }
}

/// Whether values of E are copied as their bytes (bulk_element, or packed).
template <class E>
bool copied_whole() {
  if constexpr (bulk_element<E>) return true;
  else return packed<E>();
}
template <class E>
inline constexpr bool maybe_copied_whole = bulk_element<E> || packable<E>();

}  // namespace detail

template <class T>
struct codec;

namespace detail {

inline constexpr std::size_t not_fixed = static_cast<std::size_t>(-1);

/// How many bytes every value of T takes on the wire, when that is always
/// the same: numbers, enums, atoms, raw_bytes types, and fixed arrays and
/// fields types made only of those; not_fixed otherwise (strings, vectors,
/// handles, cereal types, a codec of the user's own).
template <class T>
constexpr std::size_t fixed_wire_size() {
  if constexpr (requires { codec<T>::primary; }) {  // not a codec of the user's own
    if constexpr (fixed_array<T>::value) {
      constexpr auto e = fixed_wire_size<typename fixed_array<T>::element>();
      return e == not_fixed ? not_fixed : e * fixed_array<T>::size;
    } else if constexpr (std::is_empty_v<T>) {
      return 0;
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> || raw_type<T>) {
      return sizeof(T);
    } else if constexpr (fields_type<T>) {
      return []<class... Fs>(std::tuple<Fs...>*) {
        constexpr std::size_t sizes[] = {fixed_wire_size<Fs>()..., 0};
        std::size_t n = 0;
        for (auto s : sizes) {
          if (s == not_fixed) return not_fixed;
          n += s;
        }
        return n;
      }(static_cast<field_types<T>*>(nullptr));
    }
  }
  return not_fixed;
}

/// Stores n bytes at p, and moves p past them.
inline void put_bytes(char*& p, const void* from, std::size_t n) noexcept {
  std::memcpy(p, from, n);
  p += n;
}
/// Loads n bytes from p, and moves p past them.
inline void take_bytes(const char*& p, void* to, std::size_t n) noexcept {
  std::memcpy(to, p, n);
  p += n;
}

/// Stores v (fixed_wire_size) at p, as codec<T>::write would, and moves p past it.
template <class T>
void write_fixed(char*& p, const T& v) {
  if constexpr (fixed_array<T>::value) {
    using E = typename fixed_array<T>::element;
    if constexpr (bulk_element<E>) put_bytes(p, std::data(v), fixed_array<T>::size * sizeof(E));
    else
      for (const auto& e : v) write_fixed(p, e);
  } else if constexpr (std::is_empty_v<T>) {
  } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> || raw_type<T>) {
    put_bytes(p, &v, sizeof(T));
  } else {
    if constexpr (packable<T>()) {
      if (packed<T>()) return put_bytes(p, &v, sizeof(T));
    }
    std::apply([&](const auto&... f) { (write_fixed(p, f), ...); },
               const_cast<T&>(v).fields());  // NOLINT(cppcoreguidelines-pro-type-const-cast): only read
  }
}

/// Loads v (fixed_wire_size) from p, whose bytes were checked to be there,
/// as codec<T>::read would (the same checks, the same errors), and moves p
/// past it.
template <class T>
void read_fixed(const char*& p, T& v) {
  if constexpr (fixed_array<T>::value) {
    using E = typename fixed_array<T>::element;
    if constexpr (bulk_element<E>) take_bytes(p, std::data(v), fixed_array<T>::size * sizeof(E));
    else
      for (auto& e : v) read_fixed(p, e);
  } else if constexpr (std::is_empty_v<T>) {
  } else if constexpr (std::is_same_v<T, bool>) {
    v = checked_bool(static_cast<std::uint8_t>(*p++));
  } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> || raw_type<T>) {
    take_bytes(p, &v, sizeof(T));
    if constexpr (checked_enum<T>)
      if (!enum_value_ok(v)) codec<T>::bad_enum(v);
  } else {
    if constexpr (packable<T>()) {
      if (packed<T>()) return take_bytes(p, &v, sizeof(T));
    }
    try {
      std::apply([&](auto&... f) { (read_fixed(p, f), ...); }, v.fields());
    } catch (const decode_error& e) {
      throw decode_error(codec<T>::label() + ": " + e.what());
    }
  }
}

}  // namespace detail

/// How one value type is named, written and read.
template <class T>
struct codec {
  /// This is the general codec (detail::crossable tells it from a specialisation).
  static constexpr bool primary = true;

  static std::string name() {
    if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_same_v<T, char>) return "char";
    else if constexpr (std::is_integral_v<T>)
      return std::string{std::is_signed_v<T> ? "i" : "u"} +=
             std::to_string(8 * sizeof(T));  // not "u" + ...: GCC 12 -O3 warns (-Wrestrict) on the insert
    else if constexpr (std::is_same_v<T, float>) return "f32";
    else if constexpr (std::is_same_v<T, double>) return "f64";
    else if constexpr (std::is_same_v<T, std::string>) return "string";
    else if constexpr (std::is_same_v<T, actor>) return "actor";
    else if constexpr (detail::is_typed_handle<T>::value) return detail::typed_handle_name(static_cast<T*>(nullptr));
    else if constexpr (std::is_same_v<T, error>) return "error";
    else if constexpr (std::is_same_v<T, down_msg>) return "down_msg";
    else if constexpr (std::is_same_v<T, exit_msg>) return "exit_msg";
    else if constexpr (std::is_same_v<T, ext::kill_msg>) return "kill_msg";
    else if constexpr (std::is_same_v<T, get_atom>) return "get_atom";
    else if constexpr (std::is_same_v<T, put_atom>) return "put_atom";
    else if constexpr (std::is_same_v<T, ok_atom>) return "ok_atom";
    else if constexpr (detail::is_vector<T>::value) return "vector<" + codec<typename T::value_type>::name() + ">";
    else if constexpr (detail::fixed_array<T>::value)
      return codec<typename detail::fixed_array<T>::element>::name() + "[" +
             std::to_string(detail::fixed_array<T>::size) + "]";
    else {
      std::string n = detail::user_type_name(ext::type_id_of<T>, typeid(T).name());
      if constexpr (detail::raw_type<T>) {
        n += "@raw" + std::to_string(sizeof(T)) + "a" + std::to_string(alignof(T)) + "v" +
             std::to_string(static_cast<std::uint32_t>(raw_bytes<T>::version));
      } else if constexpr (detail::fields_type<T> && !std::is_empty_v<T>) {
        n += '{';
        []<class... Fs>(std::string& s, std::tuple<Fs...>*) { ((s += codec<Fs>::name(), s += ','), ...); }(
            n, static_cast<detail::field_types<T>*>(nullptr));
        if (n.back() == ',') n.pop_back();
        n += '}';
      }
      return n;
    }
  }

  /// name() made once (a read names the type only if it fails: building
  /// the name for every value was a fifth of decoding a batch of words).
  static const char* arithmetic_name() {
    static const std::string n = name();
    return n.c_str();
  }

  /// The type for an error message: its network name, or its C++ name when
  /// it has none (codec used without add_type).
  static std::string label() {
    try {
      return name();
    } catch (const std::logic_error&) {
      return detail::readable_type_name(typeid(T).name());
    }
  }

  /// For an enum with declared values (enum_values) read as `v`, none of them.
  [[noreturn]] static void bad_enum(T v) {
    throw decode_error(label() + " holds " + std::to_string(static_cast<std::underlying_type_t<T>>(v) + 0) +
                       ", not one of its values (troupe::net::enum_values)");
  }

  static void write(writer& w, const T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      w.raw(static_cast<std::uint32_t>(v.size()));
      w.bytes(v.data(), v.size());
    } else if constexpr (std::is_same_v<T, actor>) {
      w.context()->write_actor(w, v);
    } else if constexpr (detail::is_typed_handle<T>::value) {
      w.context()->write_actor(w, v.address());
    } else if constexpr (std::is_same_v<T, error>) {
      // A core error: its code (a byte), then the message. A module's error:
      // 0xFF, its category's name, the code, the core code it stands for
      // (never none) and the code's name, then the message, so that a process
      // without that category still reads it (see read).
      if (v.category() == core_category()) {
        w.raw(static_cast<std::uint8_t>(v.value()));
      } else {
        const auto text = [&w](std::string_view s) {
          w.raw(static_cast<std::uint32_t>(s.size()));
          w.bytes(s.data(), s.size());
        };
        w.raw(std::uint8_t{0xFF});
        text(v.category().name());
        w.raw(v.value());
        w.raw(static_cast<std::uint8_t>(v.code() == errc::none ? errc::runtime_error : v.code()));
        text(v.category().text(v.value()));
      }
      codec<std::string>::write(w, v.message());
    } else if constexpr (std::is_same_v<T, down_msg> || std::is_same_v<T, exit_msg>) {
      codec<actor>::write(w, v.source);
      codec<error>::write(w, v.reason);
    } else if constexpr (std::is_same_v<T, ext::kill_msg>) {
      codec<error>::write(w, v.reason);
    } else if constexpr (detail::is_vector<T>::value) {
      using E = typename T::value_type;
      w.raw(static_cast<std::uint32_t>(v.size()));
      if constexpr (detail::maybe_copied_whole<E>) {
        if (detail::copied_whole<E>()) return w.bytes(v.data(), v.size() * sizeof(E));
      }
      for (const auto& e : v) codec<E>::write(w, e);
    } else if constexpr (detail::fixed_array<T>::value) {
      using E = typename detail::fixed_array<T>::element;
      if constexpr (detail::bulk_element<E>) w.bytes(std::data(v), detail::fixed_array<T>::size * sizeof(E));
      else
        for (const auto& e : v) codec<E>::write(w, e);
    } else if constexpr (std::is_empty_v<T>) {
      // atoms: the type says it all
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      w.raw(v);
    } else if constexpr (detail::raw_type<T>) {
      static_assert(std::is_trivially_copyable_v<T> && !std::is_pointer_v<T>,
                    "troupe::net::raw_bytes<T>: only a trivially copyable type without pointers may cross as its "
                    "bytes; list its fields instead (auto fields() { return std::tie(a, b); })");
      w.raw(v);
    } else if constexpr (detail::fields_type<T>) {
      if constexpr (detail::packable<T>()) {
        if (detail::packed<T>()) return w.raw(v);  // the same bytes as field by field
      }
      if constexpr (constexpr auto n = detail::fixed_wire_size<T>(); n != detail::not_fixed) {
        // Fields of fixed sizes: the buffer grows once, then each is stored.
        auto& out = w.buffer();
        const std::size_t at = out.size();
        out.resize(at + n);
        char* p = out.data() + at;
        detail::write_fixed(p, v);
        return;
      }
      // fields() hands out references; writing only reads them.
      std::apply([&](auto&... f) { (codec<std::remove_cvref_t<decltype(f)>>::write(w, f), ...); },
                 const_cast<T&>(v).fields());  // NOLINT(cppcoreguidelines-pro-type-const-cast)
    } else if constexpr (detail::cereal_type<T>) {
      detail::out_buf buf{w.buffer()};
      std::ostream os{&buf};
      cereal::BinaryOutputArchive ar{os};
      ar(v);
    } else {
      static_assert(detail::always_false<T>,
                    "troupe::net: this type cannot cross the network: list its fields (a member "
                    "`auto fields() { return std::tie(a, b); }`), give it a cereal serialize() template, or, for a "
                    "trivially copyable type whose bytes may cross as they are, specialise troupe::net::raw_bytes<T> "
                    "with a version (docs/net.md, Wire safety)");
    }
  }

  static void read(reader& r, T& v) {
    if constexpr (std::is_same_v<T, std::string>) {
      auto n = r.count(1, "string");
      const char* p = r.take(n, "string");
      v.assign(p, n);
    } else if constexpr (std::is_same_v<T, actor>) {
      v = r.context()->read_actor(r);
    } else if constexpr (detail::is_typed_handle<T>::value) {
      v = T{r.context()->read_actor(r)};
    } else if constexpr (std::is_same_v<T, error>) {
      auto code = r.raw<std::uint8_t>("error code");
      if (code != 0xFF) {
        if (core_category().text(code).empty())
          throw decode_error("error code " + std::to_string(code) + " is not a troupe::errc");
        std::string msg;
        codec<std::string>::read(r, msg);
        v = error{static_cast<errc>(code), std::move(msg)};
      } else {
        std::string name, text, msg;
        codec<std::string>::read(r, name);
        const auto value = r.raw<error::code_type>("error code");
        const auto core = r.raw<std::uint8_t>("error core code");
        codec<std::string>::read(r, text);
        codec<std::string>::read(r, msg);
        if (core == 0 || core_category().text(core).empty())
          throw decode_error("error of category '" + name + "': core code " + std::to_string(core) +
                             " is not a troupe::errc");
        const auto* cat = error_category::find(name);
        if (cat != nullptr && !text.empty() && cat->text(value) == text) {
          v = error{*cat, value, std::move(msg)};
        } else {  // a category (or a code) unknown here: the core code, naming them
          std::string what = name + "." + (text.empty() ? std::to_string(value) : text);
          if (!msg.empty()) what += ": " + msg;
          v = error{static_cast<errc>(core), std::move(what)};
        }
      }
    } else if constexpr (std::is_same_v<T, down_msg> || std::is_same_v<T, exit_msg>) {
      codec<actor>::read(r, v.source);
      codec<error>::read(r, v.reason);
    } else if constexpr (std::is_same_v<T, ext::kill_msg>) {
      codec<error>::read(r, v.reason);
    } else if constexpr (detail::is_vector<T>::value) {
      using E = typename T::value_type;
      if constexpr (detail::maybe_copied_whole<E>) {
        if (detail::copied_whole<E>()) {
          auto n = r.count(sizeof(E), "vector");
          v.resize(n);
          const char* p = r.take(n * sizeof(E), "vector");
          if (n != 0) std::memcpy(v.data(), p, n * sizeof(E));  // an empty vector's data() may be null
          return;
        }
      }
      auto n = r.count(std::is_empty_v<E> ? 0 : 1, "vector");
      if (std::is_empty_v<E> && n > (std::size_t{1} << 20)) throw decode_error("vector of atoms too long");
      v.clear();
      v.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<E, bool>) {  // std::vector<bool> hands out no bool&
          bool b = false;
          codec<bool>::read(r, b);
          v.push_back(b);
        } else {
          codec<E>::read(r, v.emplace_back());
        }
      }
    } else if constexpr (detail::fixed_array<T>::value) {
      using E = typename detail::fixed_array<T>::element;
      constexpr std::size_t bytes = detail::fixed_array<T>::size * sizeof(E);
      if constexpr (detail::bulk_element<E>) std::memcpy(std::data(v), r.take(bytes, "array"), bytes);
      else
        for (auto& e : v) codec<E>::read(r, e);
    } else if constexpr (std::is_empty_v<T>) {
    } else if constexpr (std::is_same_v<T, bool>) {
      v = detail::checked_bool(r.raw<std::uint8_t>("bool"));
    } else if constexpr (std::is_arithmetic_v<T> || detail::raw_type<T>) {
      v = r.raw<T>(arithmetic_name());
    } else if constexpr (std::is_enum_v<T>) {
      v = r.raw<T>(arithmetic_name());
      if constexpr (detail::checked_enum<T>)
        if (!detail::enum_value_ok(v)) bad_enum(v);
    } else if constexpr (detail::fields_type<T>) {
      if constexpr (detail::packable<T>()) {
        if (detail::packed<T>()) {
          v = r.raw<T>(arithmetic_name());
          return;
        }
      }
      try {
        if constexpr (constexpr auto n = detail::fixed_wire_size<T>(); n != detail::not_fixed) {
          // Fields of fixed sizes: one bounds check for all, then each is
          // loaded (and checked where it has to be: bool, enum_values).
          const char* p = r.take(n, "value");
          std::apply([&](auto&... f) { (detail::read_fixed(p, f), ...); }, v.fields());
          return;
        }
        std::apply([&](auto&... f) { (codec<std::remove_cvref_t<decltype(f)>>::read(r, f), ...); }, v.fields());
      } catch (const decode_error& e) {
        throw decode_error(label() + ": " + e.what());  // the path to a bad field: "order: line: bool holds 2"
      }
    } else if constexpr (detail::cereal_type<T>) {
      const char* begin = r.take(0, "cereal value");
      detail::cereal_reader ar{begin, begin + r.left()};
      try {
        ar(v);
      } catch (const cereal::Exception& e) {
        throw decode_error(label() + ": " + e.what());
      } catch (const decode_error& e) {
        throw decode_error(label() + ": " + e.what());
      }
      r.take(r.left() - ar.left(), "cereal value");
    } else {
      static_assert(detail::always_false<T>, "troupe::net: this type cannot cross the network (see codec::write)");
    }
  }
};

namespace detail {

/// Whether codec<T> knows how to write T (what codec.hpp's opening lists,
/// or a specialisation of codec for T).
template <class T>
constexpr bool crossable() {
  if constexpr (!requires { codec<T>::primary; } || std::is_same_v<T, std::string> || std::is_same_v<T, actor> ||
                is_typed_handle<T>::value || std::is_same_v<T, error> || std::is_same_v<T, down_msg> ||
                std::is_same_v<T, exit_msg> || std::is_same_v<T, ext::kill_msg>)
    return true;
  else if constexpr (is_vector<T>::value) return crossable<typename T::value_type>();
  else if constexpr (fixed_array<T>::value) return crossable<typename fixed_array<T>::element>();
  else
    return std::is_empty_v<T> || std::is_arithmetic_v<T> || std::is_enum_v<T> || raw_type<T> || fields_type<T> ||
           cereal_type<T>;
}

/// One message type that may cross the network.
struct message_type {
  std::string name;    ///< "put_atom,string,point"; "()" for the empty message
  std::uint64_t hash;  ///< FNV-1a of name: what travels
  const void* type_id;
  /// Writes the values of `m` (which holds this type).
  void (*encode)(writer&, const ext::mail& m);
  /// Reads the values and builds the message (throws decode_error).
  ext::mail (*decode)(reader&, actor sender, std::uint64_t id);
  std::size_t index = 0;  ///< registration order (set by register_message)
};

std::uint64_t name_hash(const std::string& name) noexcept;
/// Registers (idempotent); throws std::logic_error when another message type
/// has the same name hash.
const message_type& register_message(message_type t);
const message_type* find_message(const void* type_id) noexcept;
const message_type* find_message(std::uint64_t hash) noexcept;
/// How many message types are registered (they are numbered in the order
/// of registration; a node announces to each peer the ones it has not yet).
std::size_t registered_count() noexcept;
/// The hashes of the types numbered [from, to) (the handshake: [0, count)).
std::vector<std::uint64_t> registered_hashes(std::size_t from, std::size_t to);

template <class... Ts>
std::string message_name() {
  if constexpr (sizeof...(Ts) == 0) {
    return "()";
  } else {
    std::string s;
    ((s += (s.empty() ? "" : ","), s += codec<Ts>::name()), ...);
    return s;
  }
}

template <class... Ts>
void encode_values(writer& w, const ext::mail& m) {
  std::apply([&](const auto&... v) { (codec<std::decay_t<decltype(v)>>::write(w, v), ...); }, m.values<Ts...>());
}

template <class... Ts>
ext::mail decode_values(reader& r, actor sender, std::uint64_t id) {
  std::tuple<Ts...> vals;
  std::apply([&](auto&... v) { (codec<std::decay_t<decltype(v)>>::read(r, v), ...); }, vals);
  r.expect_end("message");
  return std::apply([&](auto&... v) { return ext::make_mail(std::move(sender), id, std::move(v)...); }, vals);
}

template <class T>
struct result_message {
  template <class... Us>
  static void add();
};

}  // namespace detail

/// Names a user type for the network (before any message holding it is
/// registered). Names must be the same on every node.
template <class T>
void add_type(const std::string& name) {
  detail::add_user_type_name(ext::type_id_of<T>, typeid(T).name(), name);
}

/// Lets messages holding exactly these values (in this order) cross the
/// network. Register the responses of requests too (a handler returning int
/// answers with add_message<int>()). A typed handle among the values
/// registers its interface's messages and results too, so the actor it
/// names can be asked across the network. Throws std::logic_error naming a
/// value type that has no name (see add_type).
template <class... Ts>
void add_message() {
  static_assert((std::is_default_constructible_v<Ts> && ...),
                "troupe::net: message values must be default-constructible to be read");
  static_assert((detail::crossable<Ts>() && ...),
                "troupe::net: a value type of this message cannot cross the network: list its fields (a member "
                "`auto fields() { return std::tie(a, b); }`), give it a cereal serialize() template, or, for a "
                "trivially copyable type whose bytes may cross as they are, specialise troupe::net::raw_bytes<T> "
                "with a version (docs/net.md, Wire safety)");
  (
      [] {
        if constexpr (detail::is_typed_handle<Ts>::value) (void)detail::add_interface(static_cast<Ts*>(nullptr));
      }(),
      ...);
  static_assert(((!detail::raw_type<Ts> || (std::is_trivially_copyable_v<Ts> && !std::is_pointer_v<Ts>)) && ...),
                "troupe::net::raw_bytes<T>: only a trivially copyable type without pointers may cross as its bytes; "
                "list its fields instead (auto fields() { return std::tie(a, b); })");
  if constexpr ((detail::crossable<Ts>() && ...) &&
                ((!detail::raw_type<Ts> || std::is_trivially_copyable_v<Ts>) && ...)) {  // else: one error above
    detail::message_type t;
    t.name = detail::message_name<Ts...>();
    t.hash = detail::name_hash(t.name);
    t.type_id = ext::type_id_of<Ts...>;
    t.encode = &detail::encode_values<Ts...>;
    t.decode = &detail::decode_values<Ts...>;
    detail::register_message(std::move(t));
  }
}

namespace detail {

template <class R>
void add_result() {
  if constexpr (std::is_void_v<R>) add_message<>();
  else if constexpr (ext::is_tuple_v<R>)
    []<class... Us>(std::tuple<Us...>*) { add_message<Us...>(); }(static_cast<R*>(nullptr));
  else add_message<R>();
}

template <class Sig>
std::string signature_name() {
  using S = ext::signature_of<Sig>;
  std::string args = []<class... As>(std::tuple<As...>*) {
    return message_name<As...>();
  }(static_cast<typename S::args*>(nullptr));
  std::string result;
  if constexpr (std::is_void_v<typename S::result>) result = "()";
  else if constexpr (ext::is_tuple_v<typename S::result>)
    result = []<class... Us>(std::tuple<Us...>*) {
      return message_name<Us...>();
    }(static_cast<typename S::result*>(nullptr));
  else result = message_name<typename S::result>();
  return "(" + args + ")->(" + result + ")";
}

template <class Sig>
void add_signature() {
  using S = ext::signature_of<Sig>;
  []<class... As>(std::tuple<As...>*) { add_message<As...>(); }(static_cast<typename S::args*>(nullptr));
  add_result<typename S::result>();
}

/// Registers every message of the interface; returns its hash (what a
/// lookup compares).
template <class... Sigs>
std::uint64_t add_interface(typed_actor<Sigs...>*) {
  (add_signature<Sigs>(), ...);
  std::string all;
  ((all += signature_name<Sigs>(), all += ";"), ...);
  return name_hash(all);
}

}  // namespace detail
}  // namespace troupe::net
