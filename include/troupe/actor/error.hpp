// error.hpp: the error value that travels between actors: exit reasons of
// actors, failed requests, unexpected messages.
// Use: compare code() against errc; message() says what happened in words.
// Cost: a byte and a std::string; errors are the slow path.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace troupe {

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
  remote_unreachable,   ///< the node of a remote actor was lost (troupe::net)
};

std::string_view to_string(errc code) noexcept;

class error {
 public:
  error() noexcept = default;
  explicit error(errc code, std::string message = {}) : code_{code}, message_{std::move(message)} {}

  errc code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  /// true for an actual error; a normal exit is `error{}` (errc::none).
  explicit operator bool() const noexcept { return code_ != errc::none; }

  /// "request_timeout: no response within 10 ms"
  std::string to_string() const;

  friend bool operator==(const error& a, const error& b) noexcept { return a.code_ == b.code_; }
  friend bool operator==(const error& a, errc b) noexcept { return a.code_ == b; }

 private:
  errc code_ = errc::none;
  std::string message_;
};

}  // namespace troupe
