// placement.cpp: placements on ranks (see include/troupe/runtime/placement.hpp).
#include "troupe/runtime/placement.hpp"

#include <cctype>
#include <stdexcept>

namespace troupe {

placement placement::on_ranks(std::vector<std::size_t> r) const {
  if (r.empty()) throw std::invalid_argument("troupe::placement: an empty list of ranks");
  placement p = *this;
  p.ranks_ = std::move(r);
  return p;
}

placement placement::on_ranks(const std::string& text) const {
  std::vector<std::size_t> r;
  std::size_t i = 0;
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument("troupe::placement: ranks '" + text + "': " + why);
  };
  for (;;) {
    while (i < text.size() && text[i] == ' ') ++i;
    const std::size_t from = i;
    std::size_t v = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
      if (v > 1'000'000) throw bad("rank '" + text.substr(from, i - from + 1) + "...' is too large");
      v = v * 10 + static_cast<std::size_t>(text[i] - '0');
      ++i;
    }
    if (i == from)
      throw bad(i < text.size() ? "'" + text.substr(i, 1) + "' at position " + std::to_string(i) + " is not a rank"
                                : "a rank is missing at the end");
    r.push_back(v);
    while (i < text.size() && text[i] == ' ') ++i;
    if (i == text.size()) break;
    if (text[i] != ',')
      throw bad("'" + text.substr(i, 1) + "' at position " + std::to_string(i) + " (ranks are separated by ',')");
    ++i;
  }
  return on_ranks(std::move(r));
}

std::string placement::to_string() const {
  std::string s;
  if (threads_) s = own_ ? (cores_.empty() ? "own_thread" : "own_thread(" + cores_ + ")") : "pool";
  if (!ranks_.empty()) {
    s += s.empty() ? "ranks " : " on ranks ";
    for (std::size_t i = 0; i < ranks_.size(); ++i) s += (i ? "," : "") + std::to_string(ranks_[i]);
  }
  return s;
}

}  // namespace troupe
