// system_messages.hpp: messages the runtime itself sends to actors.
//  - down_msg: a monitored actor ended (reason inside). Handled by the
//    monitor's down handler; ignored when none is set.
//  - exit_msg: a linked actor ended. Without an exit handler, a non-normal
//    reason ends the receiver too (fate sharing); a normal one is ignored.
// Both arrive with urgent priority.
#pragma once

#include <cstdint>

#include "troupe/actor/actor.hpp"
#include "troupe/actor/error.hpp"
#include "troupe/actor/message.hpp"

namespace troupe {

struct down_msg {
  actor source;
  error reason;
};

struct exit_msg {
  actor source;
  error reason;
};

/// Atoms: empty types used to name a request ("get", "put", ...).
struct get_atom {};
struct put_atom {};
struct ok_atom {};

namespace detail {
struct kill_msg {
  error reason;
};
struct timeout_msg {
  std::uint64_t request_id;
};
template <>
struct is_system_message<down_msg> : std::true_type {};
template <>
struct is_system_message<exit_msg> : std::true_type {};
template <>
struct is_system_message<kill_msg> : std::true_type {};
template <>
struct is_system_message<timeout_msg> : std::true_type {};
}  // namespace detail

}  // namespace troupe
