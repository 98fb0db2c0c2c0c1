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
// value is a config_error naming the key, the value and the problem.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace troupe {

enum class polling { aggressive, moderate, relaxed };

std::string_view to_string(polling p) noexcept;

class config_error : public std::invalid_argument {
 public:
  config_error(std::string key, std::string value, std::string problem);
  const std::string& key() const noexcept { return key_; }
  const std::string& value() const noexcept { return value_; }

 private:
  std::string key_;
  std::string value_;
};

class config {
 public:
  config() = default;

  config& workers(std::size_t n);  ///< 0: one per available core
  config& polling_strategy(polling p);
  config& throughput(std::size_t n);  ///< >= 1
  config& mailbox_soft_limit(std::size_t n);  ///< >= 1
  config& worker_affinity(std::string s);
  config& detached_affinity(std::string s);
  config& blocking_affinity(std::string s);
  /// Shorthand for worker_affinity.
  config& affinity(std::string s) { return worker_affinity(std::move(s)); }

  /// Sets a knob by name: workers, polling, throughput, mailbox-soft-limit, worker-affinity,
  /// detached-affinity, blocking-affinity. Throws config_error.
  config& set(std::string_view key, std::string_view value);
  /// Reads TROUPE_WORKERS, TROUPE_POLLING, TROUPE_THROUGHPUT, TROUPE_MAILBOX_SOFT_LIMIT,
  /// TROUPE_WORKER_AFFINITY, TROUPE_DETACHED_AFFINITY, TROUPE_BLOCKING_AFFINITY.
  config& load_env();
  /// "key = value" lines; '#' starts a comment. Throws config_error with the line number.
  config& load_file(const std::string& path);

  std::size_t workers() const noexcept { return workers_; }
  /// workers() or, when 0, the number of cores available to the process.
  std::size_t effective_workers() const noexcept;
  polling polling_strategy() const noexcept { return polling_; }
  std::size_t throughput() const noexcept { return throughput_; }
  std::size_t mailbox_soft_limit() const noexcept { return mailbox_soft_limit_; }
  const std::string& worker_affinity() const noexcept { return worker_affinity_; }
  const std::string& detached_affinity() const noexcept { return detached_affinity_; }
  const std::string& blocking_affinity() const noexcept { return blocking_affinity_; }

 private:
  std::size_t workers_ = 0;
  polling polling_ = polling::moderate;
  std::size_t throughput_ = 100;
  std::size_t mailbox_soft_limit_ = 1024;
  std::string worker_affinity_;
  std::string detached_affinity_;
  std::string blocking_affinity_;
};

}  // namespace troupe
