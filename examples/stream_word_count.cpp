// A typed stream graph: lines -> words -> counts per word (a farm routed by
// word, each replica owns its words) -> a sink, with backpressure on every
// channel and no router node between the stages.
#include <troupe/troupe.hpp>

#include <cstdio>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace st = troupe::stream;

// [graph]
// A class node with private state: one copy per replica.
struct counter : st::node<std::string, std::pair<std::string, int>> {
  std::unordered_map<std::string, int> counts;
  void consume(std::string& word) { send_next({word, ++counts[word]}); }
};

int main() {
  const std::vector<std::string> lines{"the quick brown fox", "jumps over the lazy dog", "the end"};
  std::map<std::string, int> final_count;

  troupe::actor_system sys;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{st::source([&, i = std::size_t{0}]() mutable -> std::optional<std::string> {
                         if (i == 3 * lines.size()) return std::nullopt;  // three passes over the text
                         return lines[i++ % lines.size()];
                       }),
                       st::flat_map<std::string>([](std::string& line, st::emitter<std::string>& out) {
                         std::istringstream words{line};
                         for (std::string w; words >> w;) out.send_next(std::move(w));
                       }),
                       troupe::farm{counter{}, 3, troupe::by_key{std::identity{}}},  // the word is the key (no copy)
                       st::sink([&](const std::pair<std::string, int>& wc) { final_count[wc.first] = wc.second; })});
  g.wait();  // every node saw the end of the stream; rethrows a node's exception
  // [/graph]

  for (auto& [w, c] : final_count) std::printf("%-6s %d\n", w.c_str(), c);
  auto m = g.metrics();
  // Metrics list the node replicas front to back: source, flat_map, 3 counters, sink.
  std::printf("%zu node replicas, %llu lines in, %llu counts out\n", m.nodes.size(),
              static_cast<unsigned long long>(m.nodes.front().items_out),
              static_cast<unsigned long long>(m.nodes.back().items_in));
  return final_count["the"] == 9 && final_count["fox"] == 3 && final_count.size() == 9 ? 0 : 1;
}
