// errors.hpp: the error codes of troupe::net, category "net".
//   if (reason == troupe::net::net_errc::remote_unreachable) ...   // the node was lost
//   reason.category() == troupe::net::net_category()               // any net failure
// Errors of this category end proxies, requests and split graphs; they
// cross the network like every troupe::error (a process without troupe::net
// reads them as errc::runtime_error naming "net.<code>"). The exceptions of
// the module carry them too: net_error (net_errc::operation_failed) and
// decode_error (net_errc::malformed_message), both troupe::exception.
// Cost: none until an error is made.
#pragma once

#include <cstdint>

#include "troupe/util/error.hpp"

namespace troupe::net {

enum class net_errc : std::uint16_t {
  /// The node of a remote actor, or a peer of a cluster, was lost: killed,
  /// frozen or cut off (no heartbeat within heartbeat_timeout), or closed.
  /// error::code() reports it as the (deprecated) errc::remote_unreachable.
  remote_unreachable = 1,
  /// A network operation failed (listen, connect, look up, keys, launcher
  /// settings): net_error, whose message says what and where.
  operation_failed,
  /// A value read from the network did not have the expected shape:
  /// decode_error.
  malformed_message,
};

/// The category "net"; made and registered when troupe::net is linked.
const error_category& net_category() noexcept;
/// The ADL hook that makes net_errc an error_code_enum.
inline const error_category& category_of(net_errc) noexcept { return net_category(); }

}  // namespace troupe::net
