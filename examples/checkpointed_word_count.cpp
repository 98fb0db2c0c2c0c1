// A word count that survives a crash: its graph takes checkpoints, is
// stopped midway (as a crash would stop it), and is started again with the
// same command; the output file then holds exactly what a run without the
// crash writes. docs/fault-tolerance.md explains each part.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "troupe/troupe.hpp"

namespace st = troupe::stream;
using namespace std::chrono_literals;

// [state]
// Counts words; its counts are its state: saved at every checkpoint,
// restored when the graph resumes. It emits "word count" lines at the end.
struct word_counter : st::node<std::string, std::string> {
  std::map<std::string, std::uint64_t> counts;
  void consume(std::string& word) { ++counts[word]; }
  void on_stop() {
    for (auto& [w, n] : counts) send_next(w + " " + std::to_string(n));
  }
  void snapshot(st::state_writer& out) const { out.write(counts); }
  void restore(st::state_reader& in) { in.read(counts); }
};
// [/state]

// [graph]
st::graph count_words(troupe::actor_system& sys, const std::string& input, const std::string& output,
                      const std::string& checkpoints) {
  return troupe::spawn_pattern(
      sys,
      troupe::pipeline{st::file_lines(input),  // replayable: its state is its offset in the file
                       st::flat_map<std::string>([](std::string& line, st::emitter<std::string>& out) {
                         std::istringstream words{line};
                         for (std::string w; words >> w;) out.send_next(std::move(w));
                       }),
                       troupe::farm{word_counter{}, 2, troupe::by_key{std::identity{}}},
                       st::file_sink(output)},  // exactly once: commits with the checkpoints
      {.checkpoint = {.dir = checkpoints, .interval = 20ms}});
}
// [/graph]

std::vector<std::string> sorted_lines(const std::string& path) {
  std::ifstream in{path};
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::sort(lines.begin(), lines.end());
  return lines;
}

int main() {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / "troupe_checkpointed_word_count";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto input = (dir / "input.txt").string();
  {
    std::ofstream in{input};
    for (int i = 0; i < 200'000; ++i) in << "line " << i % 97 << " of the text " << i % 13 << '\n';
  }
  troupe::actor_system sys;

  count_words(sys, input, (dir / "expected.txt").string(), (dir / "ckpt-a").string()).wait();

  // [crash]
  const auto output = (dir / "counts.txt").string(), checkpoints = (dir / "ckpt").string();
  auto first = count_words(sys, input, output, checkpoints);
  auto has_checkpoint = [&] {
    for (auto& f : fs::directory_iterator{checkpoints})
      if (f.path().extension() == ".troupe") return true;
    return false;
  };
  while (!first.done() && !has_checkpoint()) std::this_thread::sleep_for(1ms);
  first.cancel();  // stands for a crash: no end of stream, no commit
  first.wait();

  auto second = count_words(sys, input, output, checkpoints);  // the same command again
  std::printf("resumed from checkpoint %llu\n", static_cast<unsigned long long>(second.recovery().restored));
  second.wait();
  // [/crash]

  const bool same = sorted_lines(output) == sorted_lines((dir / "expected.txt").string());
  std::printf("%zu lines, %s the output of a run without the crash\n", sorted_lines(output).size(),
              same ? "the same as" : "NOT the same as");
  fs::remove_all(dir);
  return same ? 0 : 1;
}
