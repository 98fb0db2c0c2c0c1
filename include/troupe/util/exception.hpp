// exception.hpp: troupe::exception, the base of everything troupe throws.
//   try { ... } catch (const troupe::exception& e) {
//     std::cerr << e.error().to_string() << '\n';     // "invalid_argument: affinity string ..."
//     if (e.error() == troupe::net::net_errc::remote_unreachable) retry();
//   }
// Every exception class of troupe and its modules (affinity_error,
// config_error, stage_error, stream::edge_error, net::net_error,
// net::decode_error, opencl::opencl_error, metrics::metrics_error) derives
// from its standard class (std::invalid_argument, std::runtime_error), which
// still catches it as before, and from troupe::exception, which gives its
// troupe::error: a category, a code and the message (what()).
// troupe::exception is not itself a std::exception (a class with two
// std::exception bases could not be caught as std::exception); it is a
// second base. A class of your own joins the same way:
//   class my_error : public std::runtime_error, public troupe::exception {
//    public:
//     explicit my_error(const std::string& what)
//         : std::runtime_error{what}, troupe::exception{troupe::errc::runtime_error} {}
//   };
// Cost: a pointer and a code on top of the standard exception; error()
// copies the message.
#pragma once

#include <memory>

#include "troupe/util/error.hpp"

namespace troupe {

class exception {
 public:
  virtual ~exception() = default;

  /// The failure as an error value: the category and code given when it was
  /// made, and as message the error it was given, else what() of the
  /// standard exception it also is.
  troupe::error error() const;
  const error_category& category() const noexcept { return *cat_; }

 protected:
  /// The code of this failure; the message is what() of the std base.
  template <error_code_enum E>
  explicit exception(E code) noexcept : cat_{&category_of(code)}, code_{static_cast<error_category::code_type>(code)} {}
  exception(const error_category& category, error_category::code_type code) noexcept : cat_{&category}, code_{code} {}
  /// An exception that carries a whole error (its own message).
  explicit exception(troupe::error e)
      : cat_{&e.category()}, code_{e.value()}, given_{std::make_shared<const troupe::error>(std::move(e))} {}
  exception(const exception&) noexcept = default;
  exception& operator=(const exception&) noexcept = default;

 private:
  const error_category* cat_;
  error_category::code_type code_;
  std::shared_ptr<const troupe::error> given_;  ///< null: the message is what()
};

}  // namespace troupe
