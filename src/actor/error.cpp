#include "troupe/actor/error.hpp"

namespace troupe {

std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::none:
      return "none";
    case errc::unhandled_exception:
      return "unhandled_exception";
    case errc::unexpected_message:
      return "unexpected_message";
    case errc::unexpected_response:
      return "unexpected_response";
    case errc::request_timeout:
      return "request_timeout";
    case errc::actor_exited:
      return "actor_exited";
    case errc::kill:
      return "kill";
    case errc::system_shutdown:
      return "system_shutdown";
    case errc::unreachable:
      return "unreachable";
    case errc::user_shutdown:
      return "user_shutdown";
    case errc::linked_exit:
      return "linked_exit";
    case errc::runtime_error:
      return "runtime_error";
    case errc::remote_unreachable:
      return "remote_unreachable";
  }
  return "unknown";
}

std::string error::to_string() const {
  std::string out{troupe::to_string(code_)};
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

}  // namespace troupe
