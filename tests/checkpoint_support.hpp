// checkpoint_support.hpp: what the checkpoint tests share (checkpoint_test,
// rocksdb_test): directories, files, a replayable paced source, a crash
// (cancel: no on_stop, no commit), and a by-key farm over keyed state.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "troupe/troupe.hpp"

namespace checkpoint_support {

namespace st = troupe::stream;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

/// A fresh, empty directory under the test's temporary directory.
inline std::string fresh_dir(const std::string& name) {
  const auto p = fs::path{::testing::TempDir()} / ("troupe_checkpoint_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

inline std::string read_file(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

inline std::vector<fs::path> checkpoint_files(const std::string& dir) {
  std::vector<fs::path> out;
  for (auto& e : fs::directory_iterator{dir})
    if (e.path().extension() == ".troupe") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

/// Waits (bounded) until `dir` holds at least `n` checkpoint files.
inline bool wait_for_checkpoints(const std::string& dir, std::size_t n, const st::graph& g) {
  for (int i = 0; i < 3000; ++i) {
    if (checkpoint_files(dir).size() >= n) return true;
    if (g.done()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  return false;
}

/// Stops g as a crash would for its checkpoints: no on_stop, no commit, the
/// checkpoint files stay.
inline void stop_like_a_crash(const st::graph& g) {
  g.cancel();
  g.wait();
  EXPECT_TRUE(g.cancelled());
}

/// A replayable source of `n` numbers from `first`, `per_ms` of them per
/// millisecond (so that a run spans many checkpoints).
struct paced_numbers : st::replayable_source<std::int64_t> {
  std::int64_t first = 0, n = 0, per_ms = 50;
  std::int64_t next = 0;
  std::uint64_t started = 0;
  paced_numbers(std::int64_t f, std::int64_t count, std::int64_t rate) : first{f}, n{count}, per_ms{rate} {}
  void on_start() { started = st::now(); }
  bool produce() {
    if (next == n) return false;
    const auto due = started + static_cast<std::uint64_t>(next / per_ms) * 1'000'000;
    if (st::now() < due) {
      pause_until(due);
      return true;
    }
    send_next(first + next++);
    return true;
  }
  std::uint64_t position() const override { return static_cast<std::uint64_t>(next); }
  void seek(const std::uint64_t& p) override { next = static_cast<std::int64_t>(p); }
};

/// Spawns `p` with `o`, waits (bounded) for `n` checkpoints and `linger`
/// more, then stops it like a crash; whether the checkpoints were taken.
template <class P>
bool crash_after_checkpoints(troupe::actor_system& sys, P p, const st::options& o, std::size_t n = 1,
                             std::chrono::milliseconds linger = std::chrono::milliseconds{0}) {
  auto g = spawn_pattern(sys, std::move(p), o);
  const bool taken = wait_for_checkpoints(o.checkpoint.dir, n, g);
  std::this_thread::sleep_for(linger);
  stop_like_a_crash(g);
  return taken;
}

/// Waits for g; what its failure says ("" if it ended well).
inline std::string failure_of(const st::graph& g) {
  try {
    g.wait();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

/// The lines of a file, sorted (a farm's replicas write in any order).
inline std::vector<std::string> sorted_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::istringstream in{read_file(path)};
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::sort(lines.begin(), lines.end());
  return lines;
}

/// Counts per key (x % 101) in keyed state, and sends each element with
/// its key's count so far: an element counted twice, or lost, shows in
/// every later line of its key.
struct keyed_running : st::node<std::int64_t, std::string> {
  static constexpr const char* kind = "keyed_running";
  st::keyed_state<std::int64_t, std::int64_t>* counts = nullptr;
  void on_start() { counts = &keyed<std::int64_t, std::int64_t>("counts"); }
  void consume(std::int64_t& x) {
    const auto n = counts->update(x % 101, [](std::int64_t& c) { return ++c; });
    send_next(std::to_string(x) + " " + std::to_string(n));
  }
};

/// paced numbers -> a by-key farm of keyed_running -> a file.
inline auto keyed_pipeline(const std::string& out, std::int64_t n, std::size_t replicas = 3) {
  return troupe::pipeline{
      paced_numbers{0, n, 40},
      troupe::farm{keyed_running{}, replicas, troupe::by_key{[](const std::int64_t& x) { return x % 101; }}},
      st::file_sink(out)};
}

/// Runs keyed_pipeline with `first` checkpoint options, stops it like a
/// crash after a checkpoint or two (twice), resumes with `then`, and
/// expects the output to hold the lines of a run without failures. The
/// three runs have replicas[0], [1] and [2] counters; returns how the last
/// one started.
inline st::recovery keyed_recovery(const std::string& dir, const st::options& first, const st::options& then,
                                   std::array<std::size_t, 3> replicas = {3, 3, 3}) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const std::int64_t n = 20'000;
  const auto expected_path = dir + "/expected.txt";
  spawn_pattern(sys, keyed_pipeline(expected_path, n)).wait();
  const auto out = dir + "/out.txt";
  std::uint64_t restored = 0;
  bool waited = true;
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto g = spawn_pattern(sys, keyed_pipeline(out, n, replicas[attempt]), first);
    restored = std::max(restored, g.recovery().restored);
    waited = waited && wait_for_checkpoints(first.checkpoint.dir, 1, g);
    std::this_thread::sleep_for(std::chrono::milliseconds{20 * (attempt + 1)});
    stop_like_a_crash(g);
  }
  auto g = spawn_pattern(sys, keyed_pipeline(out, n, replicas[2]), then);
  const auto last = g.recovery();
  g.wait();
  EXPECT_TRUE(waited) << "a checkpoint was taken before each crash";
  EXPECT_GT(last.restored, 0u) << "the last run resumed from a checkpoint";
  EXPECT_GT(restored, 0u) << "the second run resumed from a checkpoint";
  const auto expected = sorted_lines(expected_path);
  EXPECT_EQ(expected.size(), static_cast<std::size_t>(n));
  EXPECT_EQ(sorted_lines(out), expected);
  return last;
}

}  // namespace checkpoint_support
