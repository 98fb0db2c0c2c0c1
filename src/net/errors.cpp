#include "troupe/net/errors.hpp"

#include <cstddef>
#include <iterator>
#include <string_view>

namespace troupe::net {

namespace {
constexpr std::string_view texts[] = {"", "remote_unreachable", "operation_failed", "malformed_message"};
// remote_unreachable keeps answering code() == errc::remote_unreachable for
// one release (the core code is deprecated; compare with net_errc instead).
constexpr errc core_codes[] = {errc::runtime_error, errc::remote_unreachable, errc::runtime_error, errc::runtime_error};
static_assert(std::size(texts) == std::size(core_codes));
static_assert(std::size(texts) == static_cast<std::size_t>(net_errc::malformed_message) + 1);
}  // namespace

const error_category& net_category() noexcept {
  static const error_category cat{"net", texts, core_codes};
  return cat;
}

namespace {
// Registered at start-up, so that a process learns the category before it
// reads such an error from the network (this file is linked whenever the
// module's codec or exceptions are).
[[maybe_unused]] const error_category& registered = net_category();
}  // namespace

}  // namespace troupe::net
