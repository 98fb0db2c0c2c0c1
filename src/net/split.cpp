// Split graphs: the ranks of a pipeline's stages from text
// (see include/troupe/net/split.hpp).
#include "troupe/net/split.hpp"

namespace troupe::net {

std::vector<troupe::placement> stage_ranks(const std::string& text) {
  std::vector<troupe::placement> out;
  std::size_t from = 0;
  for (std::size_t s = 0;; ++s) {
    const auto to = text.find(';', from);
    const std::string part = text.substr(from, to == std::string::npos ? std::string::npos : to - from);
    try {
      out.push_back(troupe::placement::ranks(part));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("troupe::net::stage_ranks '" + text + "': stage " + std::to_string(s) + ": " +
                                  e.what());
    }
    if (to == std::string::npos) return out;
    from = to + 1;
  }
}

}  // namespace troupe::net
