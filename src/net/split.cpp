// Split graphs: placements and the local part of a split graph
// (see include/troupe/net/split.hpp).
#include "troupe/net/split.hpp"

#include <algorithm>
#include <charconv>
#include <exception>

namespace troupe::net {

namespace {
std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::size_t from = 0;
  for (;;) {
    const auto to = s.find(sep, from);
    parts.push_back(s.substr(from, to == std::string::npos ? std::string::npos : to - from));
    if (to == std::string::npos) return parts;
    from = to + 1;
  }
}
std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}
}  // namespace

placement placement::parse(const std::string& text) {
  placement p;
  const auto stages = split_on(text, ';');
  for (std::size_t s = 0; s < stages.size(); ++s) {
    std::vector<std::size_t> ranks;
    for (const auto& raw : split_on(stages[s], ',')) {
      const std::string r = trim(raw);
      std::size_t v = 0;
      const auto [end, ec] = std::from_chars(r.data(), r.data() + r.size(), v);
      if (r.empty() || ec != std::errc{} || end != r.data() + r.size() || v > 65535) {
        std::string what = "troupe::net::placement '";
        what += text;
        what += "': stage " + std::to_string(s) + ": '";
        what += r;
        what += "' is not a rank (a whole number from 0 to 65535)";
        throw std::invalid_argument(what);
      }
      ranks.push_back(v);
    }
    p.stages_.push_back(std::move(ranks));
  }
  return p;
}

placement placement::single(std::size_t rank) {
  placement p;
  p.stages_.push_back({rank});
  return p;
}

std::size_t placement::rank_of(std::size_t s, std::size_t r) const {
  const auto& ranks = stages_.at(std::min(s, stages_.size() - 1));
  return ranks[r % ranks.size()];
}

bool placement::single_rank() const {
  const std::size_t first = stages_.front().front();
  for (const auto& st : stages_)
    for (auto r : st)
      if (r != first) return false;
  return true;
}

std::size_t placement::max_rank() const {
  std::size_t m = 0;
  for (const auto& st : stages_)
    for (auto r : st) m = std::max(m, r);
  return m;
}

std::string placement::to_string() const {
  std::string s;
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    if (i > 0) s += ';';
    for (std::size_t j = 0; j < stages_[i].size(); ++j) {
      if (j > 0) s += ',';
      s += std::to_string(stages_[i][j]);
    }
  }
  return s;
}

void split_graph::wait() const {
  std::exception_ptr first;
  for (const auto& g : parts_) {
    try {
      g.wait();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

std::size_t split_graph::peak_queued() const {
  std::size_t m = 0;
  for (const auto& s : stats_) m = std::max(m, s->peak_queued.load(std::memory_order_relaxed));
  return m;
}

void split_graph::cancel() const noexcept {
  cancelled_->store(true, std::memory_order_relaxed);
  if (stats_.empty())
    for (const auto& g : parts_) g.cancel();
}

stream::graph_metrics split_graph::metrics() const {
  if (stats_.empty()) return parts_.empty() ? stream::graph_metrics{} : parts_.front().metrics();
  stream::graph_metrics m;
  for (const auto& g : parts_) m.elapsed_s = std::max(m.elapsed_s, g.metrics().elapsed_s);
  for (const auto& s : stats_) {
    stream::node_metrics n;
    n.name = s->kind;
    n.replica = s->replica;
    n.dedicated = true;
    n.items_in = s->in.load(std::memory_order_relaxed);
    n.items_out = s->out.load(std::memory_order_relaxed);
    m.nodes.push_back(std::move(n));
    m.latency.merge(s->latency);
  }
  return m;
}

}  // namespace troupe::net
