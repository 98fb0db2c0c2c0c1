#include "troupe/util/error.hpp"

#include <algorithm>
#include <exception>
#include <iterator>
#include <mutex>
#include <vector>

#include "troupe/util/exception.hpp"

namespace troupe {

namespace {

/// The categories made so far, by name. Never destroyed: a category may be
/// unregistered by a static destructor that runs after ours would.
struct category_registry {
  std::mutex mtx;
  std::vector<const error_category*> all;
};

category_registry& registry() {
  static auto* r = new category_registry;  // NOLINT(cppcoreguidelines-owning-memory): lives as long as the process
  return *r;
}

constexpr std::string_view core_texts[] = {
    "none",
    "unhandled_exception",
    "unexpected_message",
    "unexpected_response",
    "request_timeout",
    "actor_exited",
    "kill",
    "system_shutdown",
    "unreachable",
    "user_shutdown",
    "linked_exit",
    "runtime_error",
    "remote_unreachable",
    "edge_lost",
    "invalid_argument",
    "checkpoint",
};
static_assert(std::size(core_texts) == static_cast<std::size_t>(errc::checkpoint) + 1,
              "a name for every errc, in order");

}  // namespace

std::string_view to_string(errc code) noexcept {
  const auto i = static_cast<std::size_t>(code);
  return i < std::size(core_texts) ? core_texts[i] : std::string_view{"unknown"};
}

error_category::error_category(std::string_view name, std::span<const std::string_view> texts,
                               std::span<const errc> core_codes)
    : name_{name}, texts_{texts}, core_codes_{core_codes} {
  auto& r = registry();
  std::lock_guard<std::mutex> lock{r.mtx};
  r.all.push_back(this);
}

error_category::~error_category() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock{r.mtx};
  std::erase(r.all, this);
}

errc error_category::core_code(code_type code) const noexcept {
  if (this == &core_category()) return static_cast<errc>(code);
  return code < core_codes_.size() ? core_codes_[code] : errc::runtime_error;
}

const error_category* error_category::find(std::string_view name) noexcept {
  (void)core_category();  // registered before anyone looks for it
  auto& r = registry();
  std::lock_guard<std::mutex> lock{r.mtx};
  auto it = std::find_if(r.all.begin(), r.all.end(), [name](const error_category* c) { return c->name() == name; });
  return it != r.all.end() ? *it : nullptr;
}

const error_category& core_category() noexcept {
  static const error_category cat{"troupe", core_texts};
  return cat;
}

std::string error::to_string() const {
  std::string out;
  if (cat_ == nullptr) {
    out = troupe::to_string(static_cast<errc>(code_));
  } else {
    out = cat_->name();
    out += '.';
    const auto text = cat_->text(code_);
    out += text.empty() ? std::to_string(code_) : std::string{text};
  }
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

troupe::error exception::error() const {
  if (given_) return *given_;
  const auto* std_part = dynamic_cast<const std::exception*>(this);
  return troupe::error{*cat_, code_, std_part != nullptr ? std_part->what() : std::string{}};
}

}  // namespace troupe
