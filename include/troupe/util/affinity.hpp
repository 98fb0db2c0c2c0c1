// troupe/util/affinity.hpp: thread-to-core affinity strings, parsed + applied.
//
// What: an affinity string such as "<0> <2-4> <1, 5>" lists groups of cores;
// thread i is placed on group i mod (number of groups).  Grammar:
//   range       ::= coreid | coreid - coreid
//   rangelist   ::= range | range , rangelist
//   group       ::= < rangelist >
//   grouplist   ::= group | group grouplist
//   affinitystr ::= grouplist
// ASCII whitespace may appear between any two tokens; an empty (or all
// whitespace) string means "no affinity" (zero groups).
//
// When to use: parse once at start-up (from a config value or an environment
// variable) with affinity::parse_for_machine, then call pin_current_thread(
// a.for_thread(i)) at the top of worker thread i.  Errors carry the position
// and a precise description of what is wrong.
//
// Cost: parsing is linear in the length of the string plus the number of
// cores it names; an affinity is an immutable value (a vector per group).
// parse_for_machine and available_cores make one sched_getaffinity call;
// pin_current_thread makes one pthread_setaffinity_np call.  Nothing here is
// on a hot path.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "troupe/util/exception.hpp"

namespace troupe {

// Thrown when an affinity string cannot be used.  what() names the string,
// the 0-based position of the problem (an offset into text()) and the problem.
// Also a troupe::exception, with errc::invalid_argument.
class affinity_error : public std::invalid_argument, public troupe::exception {
 public:
  affinity_error(std::string text, std::size_t position, std::string problem);

  // The whole affinity string.
  const std::string& text() const noexcept { return text_; }
  // 0-based character offset of the problem in text() (text().size() when the
  // string ended too early).
  std::size_t position() const noexcept { return position_; }
  // The problem alone, e.g. "expected a core id after '-', found 'x'".
  const std::string& problem() const noexcept { return problem_; }

 private:
  std::string text_;
  std::size_t position_;
  std::string problem_;
};

// A parsed affinity string: an immutable list of groups of core ids.
class affinity {
 public:
  // Largest core id accepted by parse (larger ids are a syntax error, which
  // also bounds the memory a single range can take).
  static constexpr int max_core_id = 65535;
  // Upper bound on the number of core ids over all groups together (after
  // de-duplication inside each group); beyond it parse throws.
  static constexpr std::size_t max_total_cores = std::size_t{1} << 22;

  // No affinity: zero groups.
  affinity() = default;

  // Checks the syntax only (and the limits above); throws affinity_error.
  static affinity parse(std::string_view text);
  // parse, then checks that every core id is in available_cores(); throws
  // affinity_error at the position of the offending id (or range).
  static affinity parse_for_machine(std::string_view text);

  bool empty() const noexcept { return groups_.empty(); }
  std::size_t group_count() const noexcept { return groups_.size(); }
  // Core ids of group i, sorted and de-duplicated, never empty.
  // Throws std::out_of_range if i >= group_count().
  const std::vector<int>& group(std::size_t i) const;
  // group(thread_index % group_count()).  Precondition: !empty(); throws
  // std::out_of_range if it is violated.
  const std::vector<int>& for_thread(std::size_t thread_index) const;
  // The string this was parsed from ("" for a default-constructed affinity).
  const std::string& text() const noexcept { return text_; }

 private:
  std::string text_;
  std::vector<std::vector<int>> groups_;

  static affinity parse_impl(std::string_view text, const std::vector<int>* available);
};

// Cores this process may run on (sched_getaffinity), sorted ascending.  Falls
// back to 0 .. hardware_concurrency()-1 if the OS call fails.
std::vector<int> available_cores();

// Pins the calling thread to `cores` (pthread_setaffinity_np).  An empty
// vector is a no-op that returns true.  Returns false (never throws) if the
// OS refuses, or a core id is negative or above affinity::max_core_id.
bool pin_current_thread(const std::vector<int>& cores) noexcept;

}  // namespace troupe
