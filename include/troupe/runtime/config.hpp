// config.hpp: the typed configuration of an actor_system.
// Every knob users know from CAF and SObjectizer, as data, never as macros:
//   workers          scheduler threads (default: the cores this process may use)
//   polling          how idle workers wait: aggressive (spin, never sleep),
//                    moderate (spin up to ~50 us, then sleep; a worker whose
//                    spinning has not been paying off spins less, down to
//                    relaxed's ~5 us), relaxed (spin ~5 us, then sleep)
//   throughput       messages an actor handles per activation before the
//                    worker moves on (CAF "max-throughput", SObjectizer
//                    "max_demands_at_once")
//   mailbox_soft_limit  a mailbox longer than this is "overloaded": actors
//                    sending to it yield after their current message, and
//                    the receiver keeps draining past its throughput budget
//                    until it is back under the limit (default 1024)
//   worker/detached/blocking affinity: thread-to-core affinity strings,
//                    "<0> <2-4> <1, 5>": thread i runs on group i mod n
// Values can also be set by name from strings (set("workers", "4")), from
// TROUPE_* environment variables, or from "key=value" lines in a file; a bad
// value is a config_error naming the key, the value and the problem (at
// once for those; when the actor_system is made for fields set directly).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "troupe/detail/tuning.hpp"
#include "troupe/util/exception.hpp"

namespace troupe {

enum class polling { aggressive, moderate, relaxed };

std::string_view to_string(polling p) noexcept;

/// A bad configuration value; also a troupe::exception with
/// errc::invalid_argument.
class config_error : public std::invalid_argument, public troupe::exception {
 public:
  /// The message shows the value escaped and, when long, only around `position`.
  config_error(std::string key, std::string value, std::string problem, std::size_t position = 0);
  const std::string& key() const noexcept { return key_; }
  const std::string& value() const noexcept { return value_; }
  /// What is wrong, without the key and the value (what() has all three).
  const std::string& problem() const noexcept { return problem_; }
  /// Where in value() the problem is (0 when the value as a whole is).
  std::size_t position() const noexcept { return position_; }

 private:
  std::string key_;
  std::string value_;
  std::string problem_;
  std::size_t position_;
};

/// The configuration of an actor_system, as data: a struct with designated
/// initializers, like every option set in troupe (stream::options,
/// map_accelerator_config, dac):
///   troupe::actor_system sys{troupe::config{.workers = 2, .polling = troupe::polling::relaxed}};
/// Values are checked when the actor_system is made (validate()); set(),
/// load_env() and load_file() check each value as they read it.
struct config {
  std::size_t workers = 0;                                              ///< 0: one per available core (at most 4096)
  troupe::polling polling = troupe::polling::moderate;                  ///< how idle workers wait
  std::size_t throughput = detail::tuning::throughput;                  ///< messages per activation, >= 1
  std::size_t mailbox_soft_limit = detail::tuning::mailbox_soft_limit;  ///< >= 1
  std::string worker_affinity{};                                        ///< affinity string of the workers ("" = none)
  std::string detached_affinity{};                                      ///< ... of actors on threads of their own
  std::string blocking_affinity{};                                      ///< ... of blocking actors

  /// Sets a knob by name: workers, polling, throughput, mailbox-soft-limit, worker-affinity,
  /// detached-affinity, blocking-affinity. Throws config_error.
  config& set(std::string_view key, std::string_view value);
  /// Reads TROUPE_WORKERS, TROUPE_POLLING, TROUPE_THROUGHPUT, TROUPE_MAILBOX_SOFT_LIMIT,
  /// TROUPE_WORKER_AFFINITY, TROUPE_DETACHED_AFFINITY, TROUPE_BLOCKING_AFFINITY.
  config& load_env();
  /// The TROUPE_* variables set in the environment that this config does not
  /// follow (made without load_env(), or changed after it). An actor_system
  /// made from such a config says so once on stderr: a variable set and
  /// silently ignored looks like a knob that does nothing.
  std::vector<std::string> ignored_env() const;
  /// "key = value" lines; '#' starts a comment. Throws config_error with the line number.
  config& load_file(const std::string& path);

  /// Throws config_error naming the first field out of range (or an
  /// affinity string that does not parse, or names cores this process lacks).
  void validate() const;
  /// workers or, when 0, the number of cores available to the process.
  std::size_t effective_workers() const noexcept;

  friend bool operator==(const config&, const config&) = default;
};

}  // namespace troupe
