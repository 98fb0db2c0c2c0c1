#include "troupe/runtime/config.hpp"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <utility>
#include <vector>

#include "troupe/detail/text.hpp"
#include "troupe/util/affinity.hpp"

namespace troupe {

std::string_view to_string(polling p) noexcept {
  switch (p) {
    case polling::aggressive:
      return "aggressive";
    case polling::moderate:
      return "moderate";
    case polling::relaxed:
      return "relaxed";
  }
  return "unknown";
}

config_error::config_error(std::string key, std::string value, std::string problem, std::size_t position)
    : std::invalid_argument("config key '" + key + "' with value " + detail::quoted_excerpt(value, position) + ": " +
                            problem),
      troupe::exception{errc::invalid_argument},
      key_{std::move(key)},
      value_{std::move(value)},
      problem_{std::move(problem)},
      position_{position} {}

namespace {

std::size_t parse_count(std::string_view key, std::string_view value, std::size_t min, std::size_t max) {
  std::size_t n = 0;
  auto* first = value.data();
  auto* last = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(first, last, n);
  if (value.empty() || ec == std::errc::invalid_argument || ptr != last)
    throw config_error(std::string{key}, std::string{value}, "expected a non-negative integer");
  if (ec == std::errc::result_out_of_range || n < min || n > max)
    throw config_error(std::string{key}, std::string{value},
                       max == SIZE_MAX ? "must be at least " + std::to_string(min)
                                       : "must be between " + std::to_string(min) + " and " + std::to_string(max));
  return n;
}

// Validates syntax and that the cores exist; reports as a config error.
std::string checked_affinity(std::string_view key, std::string s) {
  try {
    (void)affinity::parse_for_machine(s);
  } catch (const affinity_error& e) {
    // The affinity error's own text would quote the whole input a second time.
    throw config_error(std::string{key}, s, "at position " + std::to_string(e.position()) + ": " + e.problem(),
                       e.position());
  }
  return s;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

constexpr std::size_t max_workers = 4096;

}  // namespace

void config::validate() const {
  if (workers > max_workers)
    throw config_error("workers", std::to_string(workers), "must be between 0 and " + std::to_string(max_workers));
  if (throughput == 0) throw config_error("throughput", "0", "must be at least 1");
  if (mailbox_soft_limit == 0) throw config_error("mailbox-soft-limit", "0", "must be at least 1");
  (void)checked_affinity("worker-affinity", worker_affinity);
  (void)checked_affinity("detached-affinity", detached_affinity);
  (void)checked_affinity("blocking-affinity", blocking_affinity);
}

config& config::set(std::string_view key, std::string_view value) {
  value = trim(value);
  if (key == "workers") {
    workers = parse_count(key, value, 0, max_workers);
  } else if (key == "throughput") {
    throughput = parse_count(key, value, 1, SIZE_MAX);
  } else if (key == "mailbox-soft-limit") {
    mailbox_soft_limit = parse_count(key, value, 1, SIZE_MAX);
  } else if (key == "polling") {
    if (value == "aggressive") polling = troupe::polling::aggressive;
    else if (value == "moderate") polling = troupe::polling::moderate;
    else if (value == "relaxed") polling = troupe::polling::relaxed;
    else throw config_error("polling", std::string{value}, "expected aggressive, moderate or relaxed");
  } else if (key == "worker-affinity") {
    worker_affinity = checked_affinity(key, std::string{value});
  } else if (key == "detached-affinity") {
    detached_affinity = checked_affinity(key, std::string{value});
  } else if (key == "blocking-affinity") {
    blocking_affinity = checked_affinity(key, std::string{value});
  } else {
    throw config_error(std::string{key}, std::string{value},
                       "unknown key (known: workers, polling, throughput, mailbox-soft-limit, worker-affinity, "
                       "detached-affinity, blocking-affinity)");
  }
  return *this;
}

namespace {
constexpr std::pair<const char*, const char*> env_vars[] = {
    {"TROUPE_WORKERS", "workers"},
    {"TROUPE_POLLING", "polling"},
    {"TROUPE_THROUGHPUT", "throughput"},
    {"TROUPE_MAILBOX_SOFT_LIMIT", "mailbox-soft-limit"},
    {"TROUPE_WORKER_AFFINITY", "worker-affinity"},
    {"TROUPE_DETACHED_AFFINITY", "detached-affinity"},
    {"TROUPE_BLOCKING_AFFINITY", "blocking-affinity"},
};
}  // namespace

config& config::load_env() {
  for (auto [var, key] : env_vars)
    if (const char* v = std::getenv(var)) set(key, v);
  return *this;
}

std::vector<std::string> config::ignored_env() const {
  std::vector<std::string> ignored;
  for (auto [var, key] : env_vars) {
    const char* v = std::getenv(var);
    if (v == nullptr) continue;
    config probe = *this;
    try {
      probe.set(key, v);
    } catch (const config_error&) {
      ignored.emplace_back(var);  // not even valid: certainly not followed
      continue;
    }
    if (!(probe == *this)) ignored.emplace_back(var);
  }
  return ignored;
}

config& config::load_file(const std::string& path) {
  std::ifstream in{path};
  if (!in) throw config_error("file", path, "cannot open the file");
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::string_view l = line;
    if (auto hash = l.find('#'); hash != std::string_view::npos) l = l.substr(0, hash);
    l = trim(l);
    if (l.empty()) continue;
    auto eq = l.find('=');
    if (eq == std::string_view::npos)
      throw config_error("file", path,
                         "line " + std::to_string(line_no) + ": expected 'key = value', got '" + std::string{l} + "'");
    try {
      set(trim(l.substr(0, eq)), trim(l.substr(eq + 1)));
    } catch (const config_error& e) {
      throw config_error(e.key(), e.value(), path + " line " + std::to_string(line_no) + ": " + e.problem(),
                         e.position());
    }
  }
  return *this;
}

std::size_t config::effective_workers() const noexcept {
  if (workers != 0) return workers;
  auto n = available_cores().size();
  return n == 0 ? 1 : n;
}

}  // namespace troupe
