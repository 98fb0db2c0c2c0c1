// codec.hpp: how the values of a message are written for another process.
// A message may cross the network once its types are registered:
//   troupe::net::add_type<point>("point");            // a user type, once
//   troupe::net::add_message<put_atom, std::string, point>();
// (typed actors register their whole interface when published or looked up).
// How each value is written:
//   - arithmetic and enum values, trivially copyable structs: raw bytes
//     (both nodes must share the byte order and the layout: same build);
//   - empty types (atoms): nothing;
//   - std::string, std::vector<T>: a 32-bit length, then the elements (raw
//     bytes when T is trivially copyable);
//   - actor and typed_actor handles: the node and actor they name; they
//     become proxies on the receiving node (named "actor", and a typed one
//     "actor{<its signatures>}");
//   - troupe::error, down_msg, exit_msg: built in;
//   - a struct with a member `auto fields() { return std::tie(a, b, ...); }`:
//     its fields in that order, each as above (checked like the rest; no
//     dependency on troupe::net in the type's header);
//   - any type with a cereal serialize()/save()/load() for
//     cereal::BinaryOutputArchive: through cereal (cereal takes precedence
//     over raw bytes when a type has both).
// Types are named by the registered names, and a message type by the names
// of its values ("put_atom,string,point"); nodes compare the 64-bit hashes
// of these names, never C++ type identities.
// Decoding checks every length against the bytes that are there: a
// truncated or malformed message throws decode_error (counted by the node,
// never a crash). Cost: one lookup per message, then plain copies.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
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

template <class T>
concept cereal_type =
    std::is_class_v<T> && cereal::traits::is_output_serializable<T, cereal::BinaryOutputArchive>::value &&
    cereal::traits::is_input_serializable<T, cereal::BinaryInputArchive>::value;

/// std::streambuf over our buffers, for cereal's archives.
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
class in_buf : public std::streambuf {
 public:
  in_buf(const char* b, const char* e) {
    auto* p = const_cast<char*>(b);    // NOLINT(cppcoreguidelines-pro-type-const-cast): get area is read-only
    setg(p, p, const_cast<char*>(e));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  }
  std::size_t consumed() const noexcept { return static_cast<std::size_t>(gptr() - eback()); }
};

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_typed_handle : std::false_type {};
template <class... Sigs>
struct is_typed_handle<typed_actor<Sigs...>> : std::true_type {};

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

}  // namespace detail

/// How one value type is named, written and read.
template <class T>
struct codec {
  /// Vectors of E travel as their bytes (trivially copyable, no custom form).
  template <class E>
  static constexpr bool raw_elements =
      std::is_trivially_copyable_v<E> && !detail::cereal_type<E> && !detail::fields_type<E>;

  static std::string name() {
    if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_same_v<T, char>) return "char";
    else if constexpr (std::is_integral_v<T>) return (std::is_signed_v<T> ? "i" : "u") + std::to_string(8 * sizeof(T));
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
    else return detail::user_type_name(ext::type_id_of<T>, typeid(T).name());
  }

  /// name() made once (a read names the type only if it fails: building
  /// the name for every value was a fifth of decoding a batch of words).
  static const char* arithmetic_name() {
    static const std::string n = name();
    return n.c_str();
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
      if constexpr (raw_elements<E>) w.bytes(v.data(), v.size() * sizeof(E));
      else
        for (auto& e : v) codec<E>::write(w, e);
    } else if constexpr (std::is_empty_v<T>) {
      // atoms: the type says it all
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      w.raw(v);
    } else if constexpr (detail::fields_type<T>) {
      // fields() hands out references; writing only reads them.
      std::apply([&](auto&... f) { (codec<std::remove_cvref_t<decltype(f)>>::write(w, f), ...); },
                 const_cast<T&>(v).fields());  // NOLINT(cppcoreguidelines-pro-type-const-cast)
    } else if constexpr (detail::cereal_type<T>) {
      detail::out_buf buf{w.buffer()};
      std::ostream os{&buf};
      cereal::BinaryOutputArchive ar{os};
      ar(v);
    } else {
      static_assert(std::is_trivially_copyable_v<T> && !std::is_pointer_v<T>,
                    "troupe::net: this type cannot cross the network: give it a cereal serialize() function "
                    "(or make it trivially copyable, without pointers)");
      w.raw(v);
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
      if constexpr (raw_elements<E>) {
        auto n = r.count(sizeof(E), "vector");
        v.resize(n);
        std::memcpy(v.data(), r.take(n * sizeof(E), "vector"), n * sizeof(E));
      } else {
        auto n = r.count(std::is_empty_v<E> ? 0 : 1, "vector");
        if (std::is_empty_v<E> && n > (std::size_t{1} << 20)) throw decode_error("vector of atoms too long");
        v.clear();
        v.reserve(n);
        for (std::size_t i = 0; i < n; ++i) codec<E>::read(r, v.emplace_back());
      }
    } else if constexpr (std::is_empty_v<T>) {
    } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T>) {
      if constexpr (std::is_same_v<T, bool>) {
        auto b = r.raw<std::uint8_t>("bool");
        if (b > 1) throw decode_error("bool holds " + std::to_string(b));
        v = b != 0;
      } else {
        v = r.raw<T>(arithmetic_name());
      }
    } else if constexpr (detail::fields_type<T>) {
      std::apply([&](auto&... f) { (codec<std::remove_cvref_t<decltype(f)>>::read(r, f), ...); }, v.fields());
    } else if constexpr (detail::cereal_type<T>) {
      const char* b = r.take(0, "cereal value");
      detail::in_buf buf{b, b + r.left()};
      std::istream is{&buf};
      try {
        cereal::BinaryInputArchive ar{is};
        ar(v);
      } catch (const cereal::Exception& e) {
        throw decode_error(codec::name() + ": " + e.what());
      }
      r.take(buf.consumed(), "cereal value");
    } else {
      v = r.raw<T>("value");
    }
  }
};

namespace detail {

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
  (
      [] {
        if constexpr (detail::is_typed_handle<Ts>::value) (void)detail::add_interface(static_cast<Ts*>(nullptr));
      }(),
      ...);
  detail::message_type t;
  t.name = detail::message_name<Ts...>();
  t.hash = detail::name_hash(t.name);
  t.type_id = ext::type_id_of<Ts...>;
  t.encode = &detail::encode_values<Ts...>;
  t.decode = &detail::decode_values<Ts...>;
  detail::register_message(std::move(t));
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
