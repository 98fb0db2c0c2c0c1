// error.hpp: the one error value of troupe: exit reasons of actors, failed
// requests, unexpected messages, failed graphs, and the failures of the
// optional modules. An error is a category, a code in it and a message:
//   troupe::error{troupe::errc::request_timeout, "no response within 10 ms"}
//   troupe::error{troupe::net::net_errc::remote_unreachable, "node closed"}
// The core's codes are troupe::errc (category "troupe"); a module defines its
// codes as an enum and one error_category object that names them, and the
// error works the same everywhere (messages, links, monitors, the wire).
// Testing an error:
//   e == errc::request_timeout        the core code (code()); a module's code
//                                     counts as the core code its category
//                                     maps it to (errc::runtime_error unless
//                                     the category says otherwise)
//   e == net_errc::remote_unreachable this category and this code (e.is(...))
//   e.category() == net_category()    from this module
// Use: this is also the error inside every troupe::exception
// (util/exception.hpp). Layer util: every layer may report one.
// Cost: a pointer, a 16-bit code and a std::string; errors are the slow path.
#pragma once

#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace troupe {

/// The core's codes (category "troupe").
enum class errc : std::uint8_t {
  none = 0,             ///< no error / normal exit
  unhandled_exception,  ///< a handler threw; the actor ended
  unexpected_message,   ///< no handler accepted the message
  unexpected_response,  ///< a response did not match the awaited types
  request_timeout,      ///< no response within the request's timeout
  actor_exited,         ///< the receiver had ended or ended before replying
  kill,                 ///< forced exit (not trappable)
  system_shutdown,      ///< the actor_system stopped an idle actor at shutdown
  unreachable,          ///< no handle and no message left: the actor can never run again
  user_shutdown,        ///< the actor chose to end with an error
  linked_exit,          ///< a linked actor ended with an error
  runtime_error,        ///< other run-time failures (see message)
  /// Deprecated: net's code; use troupe::net::net_errc::remote_unreachable.
  /// Kept for one release: troupe::net maps its remote_unreachable to this
  /// core code, so `e.code() == errc::remote_unreachable` still holds.
  remote_unreachable,
  edge_lost,         ///< a stream edge to another process broke: its peer was lost or failed
  invalid_argument,  ///< a malformed argument or setting (affinity, config, command line)
  checkpoint,        ///< a stream checkpoint could not be written, read or restored
};

/// The name of a core code ("request_timeout"); "unknown" for a value that
/// is not one.
std::string_view to_string(errc code) noexcept;

/// A family of error codes with a name: the core's "troupe", a module's
/// ("net", "opencl"). A module defines one for its enum of codes, as an
/// object that lives as long as the program (a function-local static), and
/// gives the enum an ADL hook that returns it:
///   enum class widget_errc : std::uint16_t { jammed = 1, empty };
///   const troupe::error_category& category_of(widget_errc) noexcept {
///     static constexpr std::string_view texts[] = {"", "jammed", "empty"};
///     static const troupe::error_category cat{"widget", texts};
///     return cat;
///   }
/// Making the object registers it under its name, so that an error of this
/// category read from another process is recognised (error_category::find);
/// names must be unique (a second category with a taken name is not found
/// by name). Code 0 is not a module's code: a module numbers from 1.
/// Cost: made once; every query is an index into its tables.
class error_category {
 public:
  using code_type = std::uint16_t;

  /// `texts[c]` names code c and `core_codes[c]` (when given) is the core
  /// code that error::code() reports for it (errc::runtime_error when not
  /// given). Both arrays must outlive the category (static storage).
  error_category(std::string_view name, std::span<const std::string_view> texts, std::span<const errc> core_codes = {});
  ~error_category();
  error_category(const error_category&) = delete;
  error_category& operator=(const error_category&) = delete;

  /// "troupe", "net", "opencl": how the category is known, also on the wire.
  std::string_view name() const noexcept { return name_; }
  /// The name of a code ("remote_unreachable"); empty for a code without one.
  std::string_view text(code_type code) const noexcept {
    return code < texts_.size() ? texts_[code] : std::string_view{};
  }
  /// The core code that stands for `code` where only core codes are known.
  errc core_code(code_type code) const noexcept;

  /// The registered category of this name; null when none (the module is
  /// not in this process).
  static const error_category* find(std::string_view name) noexcept;

  /// Categories are objects: equal when the same one.
  friend bool operator==(const error_category& a, const error_category& b) noexcept { return &a == &b; }

 private:
  std::string_view name_;
  std::span<const std::string_view> texts_;
  std::span<const errc> core_codes_;
};

/// The core's category, "troupe", whose codes are errc.
const error_category& core_category() noexcept;
/// The ADL hook for errc (see error_category).
inline const error_category& category_of(errc) noexcept { return core_category(); }

/// An enum of error codes with a category: errc or a module's enum.
template <class E>
concept error_code_enum = std::is_enum_v<E> && requires(E code) {
  { category_of(code) } -> std::same_as<const error_category&>;
};

class error {
 public:
  using code_type = error_category::code_type;

  /// No error: a normal exit (errc::none).
  error() noexcept = default;
  /// A core error.
  explicit error(errc code, std::string message = {})
      : code_{static_cast<code_type>(code)}, message_{std::move(message)} {}
  /// A module's error: its category is category_of(code).
  template <error_code_enum E>
    requires(!std::same_as<E, errc>)
  explicit error(E code, std::string message = {})
      : error{category_of(code), static_cast<code_type>(code), std::move(message)} {}
  /// Any category's code by number (what a decoder builds).
  error(const error_category& category, code_type code, std::string message = {})
      : cat_{category == core_category() ? nullptr : &category}, code_{code}, message_{std::move(message)} {}

  const error_category& category() const noexcept { return cat_ != nullptr ? *cat_ : core_category(); }
  /// The code within category().
  code_type value() const noexcept { return code_; }
  /// The core code: the code itself for a core error; for a module's error,
  /// the core code its category maps it to (errc::runtime_error by default).
  errc code() const noexcept { return cat_ != nullptr ? cat_->core_code(code_) : static_cast<errc>(code_); }
  const std::string& message() const noexcept { return message_; }

  /// This very code: the same category and the same code.
  template <error_code_enum E>
  bool is(E code) const noexcept {
    return category() == category_of(code) && code_ == static_cast<code_type>(code);
  }

  /// true for an actual error; a normal exit is `error{}` (errc::none).
  explicit operator bool() const noexcept { return cat_ != nullptr || code_ != 0; }

  /// "request_timeout: no response within 10 ms" for a core error,
  /// "net.remote_unreachable: node closed" for a module's.
  std::string to_string() const;

  /// The same category and code (messages are not compared).
  friend bool operator==(const error& a, const error& b) noexcept { return a.cat_ == b.cat_ && a.code_ == b.code_; }
  /// The core code (code()) is `b`.
  friend bool operator==(const error& a, errc b) noexcept { return a.code() == b; }
  /// a.is(b), for a module's code.
  template <error_code_enum E>
    requires(!std::same_as<E, errc>)
  friend bool operator==(const error& a, E b) noexcept {
    return a.is(b);
  }

 private:
  const error_category* cat_ = nullptr;  ///< null: the core category
  code_type code_ = 0;
  std::string message_;
};

}  // namespace troupe
