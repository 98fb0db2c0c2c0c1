// Parser for affinity strings and the Linux calls behind available_cores and
// pin_current_thread.  See include/troupe/util/affinity.hpp.
#include "troupe/util/affinity.hpp"

#include "troupe/detail/text.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>

namespace troupe {

namespace {

// Describes one character for a message: 'x', or "the byte \x01".
std::string describe_char(char ch) {
  auto c = static_cast<unsigned char>(ch);
  if (c >= 0x20 && c < 0x7f) return std::string("'") + ch + "'";
  char buf[24];
  std::snprintf(buf, sizeof buf, "the byte \\x%02x", static_cast<unsigned>(c));
  return buf;
}

// "0-3,8,10-11" for a sorted list; "none" for an empty one.
std::string compact_list(const std::vector<int>& cores) {
  if (cores.empty()) return "none";
  std::string out;
  std::size_t i = 0;
  while (i < cores.size()) {
    std::size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cores[i]);
    if (j > i) out += '-' + std::to_string(cores[j]);
    i = j + 1;
  }
  return out;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class parser {
 public:
  parser(std::string_view text, const std::vector<int>* available) : s_(text), available_(available) {}

  std::vector<std::vector<int>> run() {
    std::vector<std::vector<int>> groups;
    std::size_t total = 0;
    skip_space();
    while (i_ < s_.size()) {
      if (s_[i_] != '<') {
        std::string p = "expected '<' to start a group, found " + describe_char(s_[i_]);
        if (!groups.empty()) p += " after the last group";
        fail(i_, std::move(p));
      }
      std::size_t open = i_;
      ++i_;
      groups.push_back(group(open));
      total += groups.back().size();
      if (total > affinity::max_total_cores) {
        fail(open, "the string names too many cores in total (more than " + std::to_string(affinity::max_total_cores) +
                       " over all groups)");
      }
      skip_space();
    }
    return groups;
  }

 private:
  struct number {
    int value;
    std::size_t pos;
  };
  struct range {
    int lo, hi;
    std::size_t lo_pos, hi_pos;
  };

  [[noreturn]] void fail(std::size_t pos, std::string problem) const {
    throw affinity_error(std::string(s_), pos, std::move(problem));
  }

  void skip_space() {
    while (i_ < s_.size() && is_space(s_[i_])) ++i_;
  }

  // Parses the rangelist and the closing '>' of the group whose '<' is at
  // `open`; returns its sorted, de-duplicated cores.
  std::vector<int> group(std::size_t open) {
    std::vector<range> ranges;
    const char* after = "after '<'";
    for (;;) {
      skip_space();
      number lo = core_id(after, open);
      number hi = lo;
      skip_space();
      if (i_ < s_.size() && s_[i_] == '-') {
        ++i_;
        skip_space();
        hi = core_id("after '-'", open);
        if (hi.value < lo.value) {
          fail(hi.pos, "range end " + std::to_string(hi.value) + " is below its start " + std::to_string(lo.value));
        }
        skip_space();
      }
      range r{lo.value, hi.value, lo.pos, hi.pos};
      check_available(r);
      ranges.push_back(r);
      if (i_ >= s_.size()) {
        fail(i_, "missing '>' to close the group opened at position " + std::to_string(open));
      }
      char c = s_[i_];
      if (c == ',') {
        ++i_;
        after = "after ','";
        continue;
      }
      if (c == '>') {
        ++i_;
        break;
      }
      std::string p = lo.pos == hi.pos ? "expected ',', '-' or '>' after core id " + std::to_string(lo.value) +
                                             ", found " + describe_char(c)
                                       : "expected ',' or '>' after range " + std::to_string(lo.value) + "-" +
                                             std::to_string(hi.value) + ", found " + describe_char(c);
      if (c == '<') {
        p += " (missing '>' to close the group opened at position " + std::to_string(open) + "?)";
      } else if (is_digit(c)) {
        p += " (separate core ids with ',')";
      }
      fail(i_, std::move(p));
    }
    // Merge the ranges, then expand: the work is bounded by the number of
    // distinct cores, not by how often the string repeats a range.
    std::sort(ranges.begin(), ranges.end(), [](const range& a, const range& b) { return a.lo < b.lo; });
    std::vector<int> cores;
    int next = -1;  // smallest core not yet emitted
    for (const range& r : ranges) {
      for (int c = std::max(r.lo, next); c <= r.hi; ++c) cores.push_back(c);
      next = std::max(next, r.hi + 1);
    }
    return cores;
  }

  // Parses one core id; `after` names the preceding token for messages.
  number core_id(const char* after, std::size_t open) {
    if (i_ >= s_.size()) {
      fail(i_, std::string("expected a core id ") + after +
                   ", reached the end of the string (missing '>' to close "
                   "the group opened at position " +
                   std::to_string(open) + ")");
    }
    char c = s_[i_];
    if (!is_digit(c)) {
      std::string p;
      std::string_view a(after);
      if (c == '>' && a == "after '<'") {
        p = "empty group: expected a core id after '<', found '>'";
      } else if (c == '>' && a == "after ','") {
        p = "dangling ',': expected a core id after ',', found '>'";
      } else if (c == '>' && a == "after '-'") {
        p = "dangling '-': expected a core id after '-', found '>'";
      } else {
        p = std::string("expected a core id ") + after + ", found " + describe_char(c);
        if (c == '-') p += " (core ids cannot be negative)";
      }
      fail(i_, std::move(p));
    }
    std::size_t start = i_;
    long long value = 0;
    bool too_large = false;
    while (i_ < s_.size() && is_digit(s_[i_])) {
      if (!too_large) {
        value = value * 10 + (s_[i_] - '0');
        if (value > affinity::max_core_id) too_large = true;
      }
      ++i_;
    }
    if (too_large) {
      std::string_view digits = s_.substr(start, i_ - start);
      std::string shown(digits.substr(0, 24));
      if (digits.size() > 24) shown += "...";
      fail(start, "core id " + shown + " is too large (the maximum is " + std::to_string(affinity::max_core_id) + ")");
    }
    return {static_cast<int>(value), start};
  }

  void check_available(const range& r) const {
    if (available_ == nullptr) return;
    const std::vector<int>& av = *available_;
    auto has = [&av](int id) { return std::binary_search(av.begin(), av.end(), id); };
    // Point at an id the user wrote when it is itself missing (the start,
    // then the end); otherwise at the start of the range with a gap.
    int c = r.lo;
    if (has(r.lo)) {
      if (!has(r.hi)) {
        c = r.hi;
      } else {
        auto it = std::lower_bound(av.begin(), av.end(), r.lo);
        while (c <= r.hi && it != av.end() && *it == c) {
          ++it;
          ++c;
        }
        if (c > r.hi) return;
      }
    }
    std::string p = "core " + std::to_string(c);
    if (r.lo != r.hi) {
      p += " (in range " + std::to_string(r.lo) + "-" + std::to_string(r.hi) + ")";
    }
    p += " is not available on this machine (available: " + compact_list(av) + ")";
    fail(c == r.hi && r.lo != r.hi ? r.hi_pos : r.lo_pos, std::move(p));
  }

  std::string_view s_;
  const std::vector<int>* available_;
  std::size_t i_ = 0;
};

}  // namespace

affinity_error::affinity_error(std::string text, std::size_t position, std::string problem)
    : std::invalid_argument("affinity string " + detail::quoted_excerpt(text, position) + ": at position " +
                            std::to_string(position) + ": " + problem),
      troupe::exception(errc::invalid_argument),
      text_(std::move(text)),
      position_(position),
      problem_(std::move(problem)) {}

affinity affinity::parse(std::string_view text) { return parse_impl(text, nullptr); }

affinity affinity::parse_for_machine(std::string_view text) {
  const std::vector<int> available = available_cores();
  return parse_impl(text, &available);
}

affinity affinity::parse_impl(std::string_view text, const std::vector<int>* available) {
  affinity a;
  a.groups_ = parser(text, available).run();
  a.text_ = std::string(text);
  return a;
}

const std::vector<int>& affinity::group(std::size_t i) const {
  if (i >= groups_.size()) {
    throw std::out_of_range("affinity::group: index " + std::to_string(i) + " but only " +
                            std::to_string(groups_.size()) + " groups");
  }
  return groups_[i];
}

const std::vector<int>& affinity::for_thread(std::size_t thread_index) const {
  if (groups_.empty()) {
    throw std::out_of_range("affinity::for_thread: the affinity is empty");
  }
  return groups_[thread_index % groups_.size()];
}

std::vector<int> available_cores() {
  // Grow the set until the kernel's mask fits (EINVAL means "too small").
  for (int ncpus = 1024; ncpus <= (1 << 20); ncpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(ncpus);
    if (set == nullptr) break;
    const std::size_t size = CPU_ALLOC_SIZE(ncpus);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) == 0) {
      std::vector<int> cores;
      for (int c = 0; c < ncpus; ++c) {
        if (CPU_ISSET_S(static_cast<std::size_t>(c), size, set)) {
          cores.push_back(c);
        }
      }
      CPU_FREE(set);
      if (!cores.empty()) return cores;
      break;
    }
    const int err = errno;
    CPU_FREE(set);
    if (err != EINVAL) break;
  }
  const unsigned n = std::max(1u, std::thread::hardware_concurrency());
  std::vector<int> cores;
  cores.reserve(n);
  for (unsigned c = 0; c < n; ++c) cores.push_back(static_cast<int>(c));
  return cores;
}

bool pin_current_thread(const std::vector<int>& cores) noexcept {
  if (cores.empty()) return true;
  int top = 0;
  for (int c : cores) {
    if (c < 0 || c > affinity::max_core_id) return false;
    top = std::max(top, c);
  }
  const int ncpus = top + 1;
  cpu_set_t* set = CPU_ALLOC(ncpus);
  if (set == nullptr) return false;
  const std::size_t size = CPU_ALLOC_SIZE(ncpus);
  CPU_ZERO_S(size, set);
  for (int c : cores) CPU_SET_S(static_cast<std::size_t>(c), size, set);
  const int rc = pthread_setaffinity_np(pthread_self(), size, set);
  CPU_FREE(set);
  return rc == 0;
}

}  // namespace troupe
