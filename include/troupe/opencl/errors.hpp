// errors.hpp: the error codes of troupe::opencl, category "opencl".
//   catch (const troupe::exception& e) {
//     if (e.error() == troupe::opencl::opencl_errc::no_device) run_on_the_cpu();
//   }
//   [](troupe::error& e) { if (e.category() == troupe::opencl::opencl_category()) ... }
// opencl_error (thrown) carries one of these codes, and kernel actors answer
// a request they cannot run with an error of this category. error::code()
// reports every code of this category as errc::runtime_error. Errors of this
// category cross the network like every troupe::error (a process without
// troupe::opencl reads them as errc::runtime_error naming "opencl.<code>").
// Cost: none until an error is made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>

#include "troupe/util/error.hpp"

namespace troupe::opencl {

enum class opencl_errc : std::uint16_t {
  /// No OpenCL platform, or no device of the type, name or number asked for.
  no_device = 1,
  /// A program did not build; opencl_error::build_log() holds the log.
  build_failed,
  /// An OpenCL call failed; opencl_error::code() holds its CL_... code and
  /// the message names it.
  call_failed,
  /// A kernel or a transfer failed on the device (a kernel actor's answer).
  kernel_failed,
  /// A bad argument, setting or request: an nd_range, a size, an argument
  /// count, an empty input or buffer, a source file that cannot be read.
  invalid_argument,
};

/// The category "opencl".
inline const error_category& opencl_category() noexcept {
  static constexpr std::string_view texts[] = {
      "", "no_device", "build_failed", "call_failed", "kernel_failed", "invalid_argument"};
  static_assert(std::size(texts) == static_cast<std::size_t>(opencl_errc::invalid_argument) + 1);
  static const error_category cat{"opencl", texts};
  return cat;
}
/// The ADL hook that makes opencl_errc an error_code_enum.
inline const error_category& category_of(opencl_errc) noexcept { return opencl_category(); }

namespace detail {
/// Registered at start-up in every program that includes this header, so
/// that such an error read from the network is recognised.
[[maybe_unused]] inline const error_category& registered_category = opencl_category();
}  // namespace detail

}  // namespace troupe::opencl
