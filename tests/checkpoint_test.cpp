// Checkpoints of stream graphs in one process (stream/checkpoint.hpp): the
// state format, barriers aligned over several inputs, recovery after a
// graph is stopped mid-run (cancel stands for a crash here: no on_stop, no
// commit), the two-phase file sink, and the checkpoint files a graph must
// skip or refuse; graphs split across ranks (local_peers: each rank its own
// actor system in this process). Killed processes: the apps_chaos tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "checkpoint_support.hpp"
#include "local_peers.hpp"
#include "troupe/troupe.hpp"

namespace {

namespace st = troupe::stream;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace checkpoint_support;

/// Sums per key (x % 7) and counts per input parity; emits nothing until
/// the end, then one line per key.
struct keyed_sums : st::node<std::int64_t, std::string> {
  std::map<std::int64_t, std::int64_t> sums;
  std::uint64_t seen = 0;
  void consume(std::int64_t& x) {
    sums[x % 7] += x;
    ++seen;
  }
  void on_stop() {
    for (auto& [k, v] : sums) send_next(std::to_string(k) + " " + std::to_string(v));
    send_next("seen " + std::to_string(seen));
  }
  void snapshot(st::state_writer& out) const {
    out.write(sums);
    out.write(seen);
  }
  void restore(st::state_reader& in) {
    in.read(sums);
    in.read(seen);
  }
};

/// Sends each element with the running sum so far (its state): an element
/// counted twice, or lost, shows in every later line.
struct running_sums : st::node<std::int64_t, std::string> {
  static constexpr const char* kind = "running_sums";
  std::int64_t sum = 0;
  void consume(std::int64_t& x) {
    sum += x;
    send_next(std::to_string(x) + " " + std::to_string(sum));
  }
  void snapshot(st::state_writer& out) const { out.write(sum); }
  void restore(st::state_reader& in) { in.read(sum); }
};

auto numbers_pipeline(const std::string& out, std::int64_t n) {
  return troupe::pipeline{paced_numbers{0, n, 40}, st::map([](std::int64_t x) { return x * 3; }), keyed_sums{},
                          st::file_sink(out)};
}

// ---- the state format

struct point {
  std::int32_t x = 0, y = 0;
  void save(st::state_writer& out) const {
    out.write(x);
    out.write(y);
  }
  void load(st::state_reader& in) {
    in.read(x);
    in.read(y);
  }
  bool operator==(const point&) const = default;
};

TEST(checkpoint_state, nested_values_come_back_as_written) {
  std::map<std::string, std::vector<point>> m{{"a", {{1, 2}, {3, 4}}}, {"", {}}};
  std::optional<std::tuple<int, std::string>> o{{7, "seven"}};
  std::vector<double> d{1.5, -2.25};
  std::set<std::uint16_t> s{3, 1, 2};
  std::string bytes;
  st::state_writer w{bytes, 9};
  EXPECT_EQ(w.checkpoint(), 9u);
  w.write(m);
  w.write(o);
  w.write(d);
  w.write(s);
  st::state_reader r{bytes, "test"};
  decltype(m) m2;
  decltype(o) o2;
  decltype(d) d2;
  decltype(s) s2;
  r.read(m2);
  r.read(o2);
  r.read(d2);
  r.read(s2);
  EXPECT_EQ(m2, m);
  EXPECT_EQ(o2, o);
  EXPECT_EQ(d2, d);
  EXPECT_EQ(s2, s);
  EXPECT_EQ(r.left(), 0u);
}

TEST(checkpoint_state, a_short_or_lying_state_is_an_error_naming_the_node) {
  std::string bytes;
  st::state_writer w{bytes};
  w.write(std::string{"hello"});
  st::state_reader cut{std::string_view{bytes}.substr(0, bytes.size() - 1), "node 'counter' (slot 3)"};
  std::string s;
  try {
    cut.read(s);
    FAIL() << "a cut state was read";
  } catch (const st::checkpoint_error& e) {
    EXPECT_NE(std::string{e.what()}.find("node 'counter' (slot 3)"), std::string::npos) << e.what();
    EXPECT_EQ(e.error(), troupe::errc::checkpoint);
  }
  std::string huge;
  st::state_writer{huge}.write(std::uint64_t{1} << 60);  // a length with nothing behind it
  st::state_reader lying{huge, "x"};
  std::vector<int> v;
  EXPECT_THROW(lying.read(v), st::checkpoint_error);
}

// ---- recovery in one process

TEST(checkpoint, a_graph_stopped_mid_run_and_started_again_gives_the_output_of_a_run_without_failures) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("recover");
  const std::int64_t n = 30'000;
  // The reference: no checkpoints, no failure.
  const auto expected_path = dir + "/expected.txt";
  spawn_pattern(sys, numbers_pipeline(expected_path, n)).wait();
  const auto expected = read_file(expected_path);
  ASSERT_FALSE(expected.empty());

  const auto out = dir + "/out.txt";
  const st::options with{.checkpoint = {.dir = dir + "/ckpt", .interval = 10ms}};
  // Three interrupted runs, then one to the end.
  std::uint64_t last_restored = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto g = spawn_pattern(sys, numbers_pipeline(out, n), with);
    EXPECT_GE(g.recovery().restored, last_restored);
    last_restored = g.recovery().restored;
    ASSERT_TRUE(wait_for_checkpoints(dir + "/ckpt", 1, g)) << "attempt " << attempt;
    std::this_thread::sleep_for(std::chrono::milliseconds{15 * (attempt + 1)});
    stop_like_a_crash(g);
  }
  auto g = spawn_pattern(sys, numbers_pipeline(out, n), with);
  EXPECT_GT(g.recovery().restored, 0u) << "the last run resumed from a checkpoint";
  g.wait();
  EXPECT_EQ(read_file(out), expected);
  EXPECT_TRUE(checkpoint_files(dir + "/ckpt").empty()) << "a job that ended normally keeps no checkpoints";
  for (auto& e : fs::directory_iterator{dir})
    EXPECT_EQ(e.path().string().find(".part-"), std::string::npos) << "a part file is left: " << e.path();
}

/// Between the source and the sink, an ordered farm: its reorder stage
/// aligns the barriers of the replicas' channels.
auto ordered_pipeline(const std::string& out, std::int64_t n) {
  return troupe::pipeline{
      paced_numbers{0, n, 60},
      troupe::farm{st::map([](std::int64_t x) { return x * x % 1000003; }), 3, troupe::round_robin{}, troupe::ordered},
      st::map([](std::int64_t x) { return std::to_string(x); }), st::file_sink(out)};
}

TEST(checkpoint, an_ordered_farm_resumes_in_order_with_every_element_once) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("ordered");
  const std::int64_t n = 20'000;
  spawn_pattern(sys, ordered_pipeline(dir + "/expected.txt", n)).wait();
  const st::options with{.checkpoint = {.dir = dir + "/ckpt", .interval = 10ms}};
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto g = spawn_pattern(sys, ordered_pipeline(dir + "/out.txt", n), with);
    ASSERT_TRUE(wait_for_checkpoints(dir + "/ckpt", 1, g)) << "attempt " << attempt;
    std::this_thread::sleep_for(20ms);
    stop_like_a_crash(g);
  }
  auto g = spawn_pattern(sys, ordered_pipeline(dir + "/out.txt", n), with);
  EXPECT_GT(g.recovery().restored, 0u);
  g.wait();
  EXPECT_EQ(read_file(dir + "/out.txt"), read_file(dir + "/expected.txt"));
}

/// A sink that counts what it got from each producer replica (by value:
/// replica r sends r * 1'000'000 + i).
struct per_source_counts : st::node<std::int64_t, void> {
  static constexpr const char* kind = "per_source_counts";
  std::vector<std::int64_t> counts = std::vector<std::int64_t>(3, 0);
  void consume(std::int64_t& x) { ++counts[static_cast<std::size_t>(x / 1'000'000)]; }
  void snapshot(st::state_writer& out) const { out.write(counts); }
  void restore(st::state_reader& in) { in.read(counts); }
};

/// Each replica of a farm of sources sends its own numbers, at its own pace.
struct replica_numbers : st::replayable_source<std::int64_t> {
  static constexpr const char* kind = "replica_numbers";
  std::int64_t n = 0, next = 0;
  std::uint64_t started = 0;
  explicit replica_numbers(std::int64_t count) : n{count} {}
  void on_start() { started = st::now(); }
  bool produce() {
    if (next == n) return false;
    const auto per_ms = static_cast<std::int64_t>(10 + 25 * replica_index());  // different speeds
    const auto due = started + static_cast<std::uint64_t>(next / per_ms) * 1'000'000;
    if (st::now() < due) {
      pause_until(due);
      return true;
    }
    send_next(static_cast<std::int64_t>(replica_index()) * 1'000'000 + next++);
    return true;
  }
  std::uint64_t position() const override { return static_cast<std::uint64_t>(next); }
  void seek(const std::uint64_t& p) override { next = static_cast<std::int64_t>(p); }
};

/// A runner's part of a checkpoint file: its node's own state, its keyed
/// states and the elements it saved (unaligned barriers; empty otherwise).
struct saved_runner {
  std::string state, keyed, inflight;
};

/// A checkpoint file's runners by node name (format version 2,
/// docs/fault-tolerance.md): after the header (magic, version, id, rank,
/// ranks: 28 bytes), before the checksum.
std::map<std::string, std::vector<saved_runner>> runners_by_name(const fs::path& file) {
  const auto bytes = read_file(file.string());
  st::state_reader r{std::string_view{bytes}.substr(28, bytes.size() - 32), file.string()};
  const auto n = r.read<std::uint64_t>();
  std::map<std::string, std::vector<saved_runner>> out;
  for (std::uint64_t i = 0; i < n; ++i) {
    r.read<std::uint64_t>();
    const auto flags = r.read<std::uint8_t>();
    const auto replica = r.read<std::uint32_t>();
    EXPECT_LT(replica, r.read<std::uint32_t>()) << "a replica of its stage's count";
    const auto name = r.read<std::string>();
    saved_runner s;
    const auto state = r.read_bytes();
    if (!state.empty()) {  // u8 flags (1: own state, 2: keyed states follow)
      st::state_reader in{state, name};
      const auto what = in.read<std::uint8_t>();
      if ((what & 1U) != 0) s.state = in.read_bytes();
      if ((what & 2U) != 0) s.keyed = state.substr(state.size() - in.left());
    }
    if ((flags & 2U) != 0) s.inflight = r.read_bytes();
    out[name].push_back(std::move(s));
  }
  EXPECT_EQ(r.left(), 0u) << file;
  return out;
}

/// In a checkpoint file of a farm of `sources` replica_numbers-like sources
/// into one per_source_counts sink: the sources' positions, sorted, and
/// the sink's counts per source, with what it saved.
struct sources_and_sink {
  std::vector<std::int64_t> positions, counts;
  std::string inflight;
  sources_and_sink(const fs::path& file, std::size_t sources) {
    auto runners = runners_by_name(file);
    EXPECT_EQ(runners["replica_numbers"].size(), sources) << file;
    for (const auto& s : runners["replica_numbers"])
      positions.push_back(static_cast<std::int64_t>(st::state_reader{s.state, "source"}.read<std::uint64_t>()));
    std::sort(positions.begin(), positions.end());
    const auto& sink = runners["per_source_counts"];
    EXPECT_EQ(sink.size(), 1u) << file;
    if (sink.empty()) return;
    counts = st::state_reader{sink[0].state, "sink"}.read<std::vector<std::int64_t>>();
    counts.resize(sources);
    inflight = sink[0].inflight;
  }
  /// The counts, sorted (the file lists nodes by slot, not by replica: the
  /// sources run at different speeds, so their positions tell them apart).
  std::vector<std::int64_t> sorted_counts() const {
    auto c = counts;
    std::sort(c.begin(), c.end());
    return c;
  }
};

TEST(checkpoint, a_node_with_several_inputs_snapshots_exactly_what_came_before_every_barrier) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("aligned");
  const std::int64_t n = 6'000;
  auto g = spawn_pattern(sys, troupe::pipeline{troupe::farm{replica_numbers{n}, 3}, per_source_counts{}},
                         {.capacity = 64, .checkpoint = {.dir = dir, .interval = 5ms, .keep = 1000}});
  ASSERT_TRUE(wait_for_checkpoints(dir, 3, g));
  stop_like_a_crash(g);  // keeps the files
  const auto files = checkpoint_files(dir);
  ASSERT_GE(files.size(), 3u);
  for (const auto& f : files) {
    const sources_and_sink saved{f, 3};
    EXPECT_TRUE(saved.inflight.empty()) << "aligned barriers save no elements";
    EXPECT_EQ(saved.sorted_counts(), saved.positions)
        << "in " << f << ": the sink counted what its sources had sent before the barrier";
  }
}

/// Replica 0 sends one number a millisecond until its first barrier, then
/// 5 more at once and ends; replica 1 sends as fast as it may. Numbers and positions
/// as replica_numbers'.
struct ending_numbers : st::node<void, std::int64_t> {
  static constexpr const char* kind = "replica_numbers";
  std::int64_t next = 0, stop_at = -1;
  std::uint64_t started = 0;
  void on_start() { started = st::now(); }
  bool produce() {
    if (replica_index() == 0) {
      if (next == stop_at) return false;
      if (const auto due = started + static_cast<std::uint64_t>(next) * 1'000'000; stop_at < 0 && st::now() < due) {
        pause_until(due);
        return true;
      }
    } else if (next == 200'000) {
      return false;
    }
    send_next(static_cast<std::int64_t>(replica_index()) * 1'000'000 + next++);
    return true;
  }
  void snapshot(st::state_writer& out) {
    out.write(static_cast<std::uint64_t>(next));
    if (replica_index() == 0 && stop_at < 0) stop_at = next + 5;
  }
  void restore(st::state_reader& in) { next = static_cast<std::int64_t>(in.read<std::uint64_t>()); }
};

/// per_source_counts, slowly (so that its input channels stay full and a
/// barrier has elements queued before it).
struct slow_per_source_counts : per_source_counts {
  static constexpr const char* kind = "per_source_counts";
  void consume(std::int64_t& x) {
    per_source_counts::consume(x);
    for (const auto until = st::now() + 20'000; st::now() < until;) {
    }
  }
};

TEST(checkpoint, a_source_that_ends_after_its_barrier_is_saved_as_it_was_at_the_barrier) {
  // Replica 0 passes the barrier, sends 5 more and ends while the slow sink
  // is still working through replica 1's full channel towards its barrier:
  // the checkpoint must hold replica 0 as it was at the barrier (the 5 come
  // again after a restart), not its final state (they would be lost).
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("ended_after_barrier");
  auto g = spawn_pattern(sys, troupe::pipeline{troupe::farm{ending_numbers{}, 2}, slow_per_source_counts{}},
                         {.capacity = 64, .checkpoint = {.dir = dir, .interval = 5ms, .keep = 1000}});
  ASSERT_TRUE(wait_for_checkpoints(dir, 3, g));
  stop_like_a_crash(g);
  for (const auto& f : checkpoint_files(dir)) {
    const sources_and_sink saved{f, 2};
    EXPECT_EQ(saved.sorted_counts(), saved.positions) << "in " << f;
  }
}

TEST(checkpoint, under_unaligned_barriers_a_node_saves_what_comes_before_them_instead_of_waiting) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("unaligned");
  const std::int64_t n = 6'000;
  auto g =
      spawn_pattern(sys, troupe::pipeline{troupe::farm{replica_numbers{n}, 3}, slow_per_source_counts{}},
                    {.capacity = 64, .checkpoint = {.dir = dir, .interval = 5ms, .keep = 1000, .unaligned = true}});
  ASSERT_TRUE(wait_for_checkpoints(dir, 3, g));
  stop_like_a_crash(g);
  const auto files = checkpoint_files(dir);
  ASSERT_GE(files.size(), 3u);
  std::size_t saved = 0;
  for (const auto& f : files) {
    sources_and_sink file{f, 3};
    // What the sink had counted at its snapshot, plus what it saved: all
    // its sources had sent before their barriers.
    if (!file.inflight.empty()) {
      st::state_reader r{file.inflight, "saved"};
      for (auto k = r.read<std::uint64_t>(); k != 0; --k, ++saved)
        ++file.counts[static_cast<std::size_t>(r.read<std::int64_t>() / 1'000'000)];
      EXPECT_EQ(r.left(), 0u);
    }
    EXPECT_EQ(file.sorted_counts(), file.positions) << "in " << f;
  }
  EXPECT_GT(saved, 0u) << "no checkpoint saved an element: the barriers were waited for";
}

/// A fast source, a slow stage behind it (its input channel stays full),
/// state after it, and every element to the sink with the running sum.
auto backpressured_pipeline(const std::string& out, std::int64_t n) {
  return troupe::pipeline{paced_numbers{0, n, 200}, st::map([](std::int64_t x) {
                            for (const auto until = st::now() + 20'000; st::now() < until;) {
                            }
                            return x * 3;
                          }),
                          running_sums{}, st::file_sink(out)};
}

TEST(checkpoint, under_unaligned_barriers_a_graph_stopped_mid_run_replays_what_it_saved_and_gives_the_same_output) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("recover_unaligned");
  const std::int64_t n = 10'000;
  spawn_pattern(sys, backpressured_pipeline(dir + "/expected.txt", n)).wait();
  const auto out = dir + "/out.txt", ckpt = dir + "/ckpt";
  const st::options with{.capacity = 64, .checkpoint = {.dir = ckpt, .interval = 10ms, .unaligned = true}};
  std::size_t resumed_with_saved = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    auto g = spawn_pattern(sys, backpressured_pipeline(out, n), with);
    ASSERT_TRUE(wait_for_checkpoints(ckpt, 1, g)) << "attempt " << attempt;
    std::this_thread::sleep_for(std::chrono::milliseconds{10 * (attempt + 1)});
    stop_like_a_crash(g);
    // The next run resumes from the newest file: did a node save elements in it?
    for (auto& [name, rs] : runners_by_name(checkpoint_files(ckpt).back()))
      for (auto& r : rs) resumed_with_saved += r.inflight.empty() ? 0 : 1;
  }
  auto g = spawn_pattern(sys, backpressured_pipeline(out, n), with);
  EXPECT_GT(g.recovery().restored, 0u);
  g.wait();
  EXPECT_TRUE(read_file(out) == read_file(dir + "/expected.txt")) << "the output differs from a run without failures";
  EXPECT_GT(resumed_with_saved, 0u) << "no run resumed with saved elements to replay";
}

/// A sink with a large state (a table of `mb` MB, so that writing each
/// checkpoint takes a while): it notes how many elements it had taken at
/// each snapshot and when it heard that checkpoint had completed.
struct heavy_sink : st::node<std::int64_t, void> {
  static constexpr const char* kind = "heavy_sink";
  std::vector<std::uint64_t> table = std::vector<std::uint64_t>(std::size_t{32} << 17, 0);  // 32 MB
  std::uint64_t taken = 0;
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>>* seen =
      nullptr;  // id -> (at snapshot, at completion)
  void consume(std::int64_t& x) {
    ++table[static_cast<std::size_t>(x) % table.size()];
    ++taken;
  }
  void snapshot(st::state_writer& out) {
    out.write(table);
    out.write(taken);
    (*seen)[out.checkpoint()].first = taken;
  }
  void restore(st::state_reader& in) {
    in.read(table);
    in.read(taken);
  }
  void on_checkpoint_complete(std::uint64_t id) { (*seen)[id].second = taken; }
};

TEST(checkpoint, snapshots_are_asynchronous_the_graph_goes_on_while_the_file_is_written) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("asynchronous");
  std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> seen;
  heavy_sink sink;
  sink.seen = &seen;
  auto g = spawn_pattern(sys,
                         troupe::pipeline{st::generator([](std::uint64_t i) -> std::optional<std::int64_t> {
                                            return static_cast<std::int64_t>(i);
                                          }),
                                          sink},
                         {.checkpoint = {.dir = dir, .interval = 5ms}});
  for (int i = 0; i < 4000 && g.checkpoints().completed < 3; ++i) std::this_thread::sleep_for(5ms);
  stop_like_a_crash(g);
  ASSERT_GE(seen.size(), 3u);
  // The sink's node went on taking elements between its snapshot (in
  // memory, on its thread) and the completion (the 32 MB file written and
  // flushed by the checkpointer's thread).
  std::size_t went_on = 0;
  for (auto& [id, at] : seen)
    if (at.second > at.first) ++went_on;
  EXPECT_GT(went_on, 0u) << "the graph stood still while its checkpoints were written";
}

// ---- the files a graph skips or refuses

TEST(checkpoint, a_corrupt_newest_checkpoint_is_skipped_for_the_one_before_it) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("corrupt");
  const auto out = dir + "/out.txt";
  const st::options with{.checkpoint = {.dir = dir + "/ckpt", .interval = 5ms, .keep = 2}};
  {
    auto g = spawn_pattern(sys, numbers_pipeline(out, 30'000), with);
    ASSERT_TRUE(wait_for_checkpoints(dir + "/ckpt", 2, g));
    stop_like_a_crash(g);
  }
  auto files = checkpoint_files(dir + "/ckpt");
  ASSERT_GE(files.size(), 2u);
  {
    std::fstream f{files.back(), std::ios::in | std::ios::out | std::ios::binary};
    f.seekp(20);
    f.put('\x7f');
  }
  auto g = spawn_pattern(sys, numbers_pipeline(out, 30'000), with);
  const auto rec = g.recovery();
  stop_like_a_crash(g);
  ASSERT_EQ(rec.skipped.size(), 1u);
  EXPECT_NE(rec.skipped[0].find("checksum"), std::string::npos) << rec.skipped[0];
  EXPECT_NE(rec.skipped[0].find(files.back().filename().string()), std::string::npos) << rec.skipped[0];
  const auto older = files[files.size() - 2].filename().string();
  EXPECT_EQ(rec.restored, std::stoull(older.substr(4, 20)));
}

TEST(checkpoint, a_checkpoint_of_another_format_version_or_graph_is_refused_with_a_clear_error) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("version");
  const auto out = dir + "/out.txt";
  const st::options with{.checkpoint = {.dir = dir + "/ckpt", .interval = 5ms}};
  {
    auto g = spawn_pattern(sys, numbers_pipeline(out, 30'000), with);
    ASSERT_TRUE(wait_for_checkpoints(dir + "/ckpt", 1, g));
    stop_like_a_crash(g);
  }
  // Another graph over the same directory.
  try {
    spawn_pattern(sys, troupe::pipeline{paced_numbers{0, 10, 1}, st::sink([](std::int64_t) {})}, with);
    FAIL() << "another graph resumed from the checkpoint";
  } catch (const st::checkpoint_error& e) {
    EXPECT_NE(std::string{e.what()}.find("another graph"), std::string::npos) << e.what();
  }
  // Another format version.
  for (const auto& f : checkpoint_files(dir + "/ckpt")) {
    std::fstream io{f, std::ios::in | std::ios::out | std::ios::binary};
    io.seekp(8);
    const std::uint32_t v = 99;
    io.write(reinterpret_cast<const char*>(&v), sizeof v);
  }
  try {
    spawn_pattern(sys, numbers_pipeline(out, 30'000), with);
    FAIL() << "a checkpoint of format version 99 was used";
  } catch (const st::checkpoint_error& e) {
    EXPECT_NE(std::string{e.what()}.find("format version 99"), std::string::npos) << e.what();
  }
}

/// What the test and a holding source share: the source's waker, whether
/// it may end, and the completions it heard while it held.
struct hold_box {
  std::mutex m;
  st::wake_handle waker;
  std::atomic<bool> let_go{false};
  std::atomic<int> heard_while_holding{0};
};

/// Sends 10 numbers, then holds, as a source waiting for its input outside
/// the graph would (a network connection), until the test lets it end.
struct holding_numbers : st::replayable_source<std::int64_t> {
  static constexpr bool waits = true;
  std::shared_ptr<hold_box> box;
  std::uint64_t next = 0;
  bool holding = false;
  explicit holding_numbers(std::shared_ptr<hold_box> b) : box{std::move(b)} {}
  void on_start() {
    std::lock_guard<std::mutex> g{box->m};
    box->waker = waker();
  }
  bool produce() {
    if (next < 10) {
      send_next(static_cast<std::int64_t>(next++));
      return true;
    }
    if (box->let_go) return false;
    holding = true;
    hold();
    return true;
  }
  void on_wake() { holding = false; }
  void on_checkpoint_complete(std::uint64_t) {
    if (holding) ++box->heard_while_holding;
  }
  std::uint64_t position() const override { return next; }
  void seek(const std::uint64_t& p) override { next = p; }
};

TEST(checkpoint, a_source_that_holds_still_takes_checkpoints_and_hears_them_complete) {
  // A source that waits for input outside the graph holds; checkpoints must
  // go on meanwhile (its barrier sent, their completion heard), or a quiet
  // input would stop every checkpoint of the graph.
  troupe::actor_system sys{troupe::config{.workers = 1}};
  const auto dir = fresh_dir("holding_source");
  auto box = std::make_shared<hold_box>();
  std::atomic<int> seen{0};
  auto g = spawn_pattern(sys, troupe::pipeline{holding_numbers{box}, st::sink([&](std::int64_t) { ++seen; })},
                         {.checkpoint = {.dir = dir, .interval = 5ms}});
  for (int i = 0; i < 2000 && box->heard_while_holding < 3; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_GE(box->heard_while_holding.load(), 3) << "no checkpoint completed while the source held";
  box->let_go = true;
  {
    std::lock_guard<std::mutex> guard{box->m};
    box->waker.wake();
  }
  g.wait();
  EXPECT_EQ(seen.load(), 10);
}

/// A sink that commits only when a checkpoint completes: what it holds at
/// its end must be committed by the graph's last checkpoint.
struct committing_sink : st::node<std::int64_t, void> {
  std::shared_ptr<std::vector<std::int64_t>> committed;
  std::vector<std::int64_t> held;
  std::vector<std::pair<std::uint64_t, std::vector<std::int64_t>>> closed;  // per checkpoint
  bool stopped = false;
  std::shared_ptr<std::atomic<int>> heard_after_stop;
  void consume(std::int64_t& x) { held.push_back(x); }
  void on_stop() { stopped = true; }
  void snapshot(st::state_writer& out) {
    closed.emplace_back(out.checkpoint(), std::move(held));
    held.clear();
    out.write(closed);
  }
  void restore(st::state_reader& in) { in.read(closed); }
  void on_checkpoint_complete(std::uint64_t id) {
    if (stopped) ++*heard_after_stop;
    std::erase_if(closed, [&](auto& c) {
      if (c.first > id && c.first != 0) return false;
      committed->insert(committed->end(), c.second.begin(), c.second.end());
      return true;
    });
  }
};

TEST(checkpoint, a_graph_that_ends_takes_a_last_checkpoint_that_its_listeners_hear_after_on_stop) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("last_checkpoint");
  committing_sink s;
  s.committed = std::make_shared<std::vector<std::int64_t>>();
  s.heard_after_stop = std::make_shared<std::atomic<int>>(0);
  auto g = spawn_pattern(sys, troupe::pipeline{paced_numbers{0, 2000, 100}, s},
                         {.checkpoint = {.dir = dir, .interval = 5ms}});
  g.wait();
  EXPECT_EQ(s.heard_after_stop->load(), 1);
  std::vector<std::int64_t> all(2000);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(*s.committed, all) << "the end of the stream was not committed";
  EXPECT_TRUE(checkpoint_files(dir).empty()) << "a job that ended leaves no checkpoint";
}

TEST(checkpoint, graphs_that_cannot_take_checkpoints_are_refused_at_spawn) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  const auto dir = fresh_dir("refused");
  const st::options with{.checkpoint = {.dir = dir}};
  // A source that keeps no position.
  EXPECT_THROW(spawn_pattern(sys,
                             troupe::pipeline{st::source([i = 0]() mutable -> std::optional<int> {
                                                if (i == 3) return std::nullopt;
                                                return i++;
                                              }),
                                              st::sink([](int) {})},
                             with),
               std::invalid_argument);
  // A graph fed by an entry actor.
  EXPECT_THROW(spawn_pattern(sys, st::sink([](int) {}), with), std::invalid_argument);
  st::options bad = with;
  bad.checkpoint.interval = 0ms;
  EXPECT_THROW(spawn_pattern(sys, numbers_pipeline(dir + "/o.txt", 10), bad), std::invalid_argument);
}

// ---- keyed state (stream/keyed_state.hpp) and key groups

TEST(key_groups, every_group_belongs_to_one_replica_in_ranges_and_by_key_routes_by_them) {
  for (std::size_t replicas : {1U, 2U, 3U, 7U, 1024U}) {
    std::vector<std::size_t> per(replicas, 0);
    std::size_t last = 0;
    for (std::size_t g = 0; g < st::key_groups; ++g) {
      const auto r = st::replica_of_group(g, replicas);
      ASSERT_LT(r, replicas);
      EXPECT_GE(r, last) << "the groups of a replica are one range";
      last = r;
      ++per[r];
    }
    const auto [lo, hi] = std::minmax_element(per.begin(), per.end());
    EXPECT_LE(*hi - *lo, 1U) << replicas << " replicas get the groups evenly";
  }
  // Integer keys (identity hashes) spread over the groups too.
  std::set<std::size_t> groups;
  for (std::uint64_t k = 0; k < 4096; ++k) {
    const auto g = st::key_group(std::hash<std::uint64_t>{}(k));
    ASSERT_LT(g, st::key_groups);
    groups.insert(g);
  }
  EXPECT_GT(groups.size(), st::key_groups * 9 / 10);
  const troupe::by_key route{[](const std::string& s) -> const std::string& { return s; }};
  for (std::string k : {"a", "troupe", "key groups", ""})
    EXPECT_EQ(route.pick(k, 5), st::replica_of_group(st::key_group(std::hash<std::string>{}(k)), 5)) << k;
}

TEST(keyed_state, behind_a_by_key_farm_it_survives_crashes_and_the_output_is_that_of_a_run_without_failures) {
  const auto dir = fresh_dir("keyed");
  const st::options with{.checkpoint = {.dir = dir + "/ckpt", .interval = 10ms}};
  keyed_recovery(dir, with, with);
}

/// In checkpoint `file` of keyed_pipeline with `replicas` counters: each
/// replica's keyed state holds the groups of one range, the replicas'
/// groups are disjoint, and every key is in its group, once.
void expect_split_by_key_group(const fs::path& file, std::size_t replicas) {
  auto runners = runners_by_name(file);
  ASSERT_EQ(runners["keyed_running"].size(), replicas);
  std::set<std::uint32_t> all;
  std::set<std::size_t> owners;
  std::int64_t keys = 0;
  for (const auto& r : runners["keyed_running"]) {
    EXPECT_TRUE(r.state.empty()) << "the node has no state of its own";
    st::state_reader in{r.keyed, "keyed part"};
    ASSERT_EQ(in.read<std::uint64_t>(), 1U) << "one keyed state";
    EXPECT_EQ(in.read<std::string>(), "counts");
    st::state_reader k{in.view_bytes(), "counts"};
    EXPECT_EQ(k.read<std::uint8_t>(), 0U) << "on the heap";
    EXPECT_EQ(k.read<std::uint32_t>(), st::key_groups);
    std::set<std::size_t> mine;
    std::uint32_t previous = 0;
    for (auto used = k.read<std::uint64_t>(); used != 0; --used) {
      const auto group = k.read<std::uint32_t>();
      EXPECT_TRUE(mine.empty() || group > previous) << "groups in ascending order";
      previous = group;
      EXPECT_TRUE(all.insert(group).second) << "group " << group << " in two replicas";
      mine.insert(st::replica_of_group(group, replicas));
      for (auto n = k.read<std::uint64_t>(); n != 0; --n) {
        const auto key = k.read<std::int64_t>();
        k.read<std::int64_t>();
        EXPECT_EQ(st::key_group(std::hash<std::int64_t>{}(key)), group) << "key " << key;
        ++keys;
      }
    }
    EXPECT_EQ(k.left(), 0U);
    EXPECT_EQ(mine.size(), 1U) << "a replica holds the groups of one range";
    if (!mine.empty()) owners.insert(*mine.begin());
  }
  EXPECT_EQ(keys, 101) << "every key once";
  EXPECT_EQ(owners.size(), replicas);
}

TEST(keyed_state, a_checkpoint_keeps_each_replica_s_state_by_key_group) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("keyed_groups");
  const st::options with{.checkpoint = {.dir = dir + "/ckpt", .interval = 10ms}};
  ASSERT_TRUE(crash_after_checkpoints(sys, keyed_pipeline(dir + "/out.txt", 1'000'000), with, 1, 50ms));
  const auto files = checkpoint_files(dir + "/ckpt");
  ASSERT_FALSE(files.empty());
  expect_split_by_key_group(files.back(), 3);
}

TEST(keyed_state, a_by_key_farm_resumes_with_fewer_or_more_replicas_and_the_output_is_that_of_a_run_without_failures) {
  const auto dir = fresh_dir("keyed_rescaled");
  const st::options with{.checkpoint = {.dir = dir + "/ckpt", .interval = 10ms}};
  // 3 counters, then 2 (from 3), then 5 (from 2, or from 3 if the second
  // run was stopped before its first checkpoint).
  const auto last = keyed_recovery(dir, with, with, {3, 2, 5});
  ASSERT_EQ(last.rescaled.size(), 1U);
  EXPECT_NE(last.rescaled[0].find("'keyed_running'"), std::string::npos) << last.rescaled[0];
  EXPECT_NE(last.rescaled[0].find("-> 5 replicas"), std::string::npos) << last.rescaled[0];
}

TEST(keyed_state, after_a_rescaled_restore_each_key_lives_only_in_the_replica_that_owns_its_group) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("keyed_regrouped");
  const st::options with{.checkpoint = {.dir = dir + "/ckpt", .interval = 10ms}};
  ASSERT_TRUE(crash_after_checkpoints(sys, keyed_pipeline(dir + "/out.txt", 1'000'000, 3), with, 1, 50ms));
  for (std::size_t replicas : {std::size_t{2}, std::size_t{4}}) {
    auto g = spawn_pattern(sys, keyed_pipeline(dir + "/out.txt", 1'000'000, replicas), with);
    const auto rec = g.recovery();
    for (int i = 0; i < 3000 && g.checkpoints().completed == 0 && !g.done(); ++i) std::this_thread::sleep_for(5ms);
    const auto completed = g.checkpoints().completed;
    stop_like_a_crash(g);
    EXPECT_EQ(rec.rescaled.size(), 1U) << replicas << " replicas";
    ASSERT_GT(completed, 0U) << "a checkpoint with " << replicas << " replicas";
    expect_split_by_key_group(checkpoint_files(dir + "/ckpt").back(), replicas);
  }
}

/// running_sums behind a farm: its own state cannot be split.
auto summing_farm(const std::string& out, std::size_t replicas) {
  return troupe::pipeline{paced_numbers{0, 1'000'000, 40}, troupe::farm{running_sums{}, replicas}, st::file_sink(out)};
}

TEST(keyed_state, a_farm_whose_node_keeps_its_own_state_cannot_change_its_count_and_says_so) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("keyed_rescale_refused");
  const st::options with{.checkpoint = {.dir = dir + "/ckpt", .interval = 10ms}};
  ASSERT_TRUE(crash_after_checkpoints(sys, summing_farm(dir + "/out.txt", 2), with));
  std::string why;
  try {
    auto g = spawn_pattern(sys, summing_farm(dir + "/out.txt", 3), with);
    why = failure_of(g);
  } catch (const st::checkpoint_error& e) {
    why = e.what();
  }
  EXPECT_NE(why.find("cannot resume 'running_sums' with 3 replicas"), std::string::npos) << why;
  EXPECT_NE(why.find("own state"), std::string::npos) << why;
  EXPECT_NE(why.find("resume with its 2 replicas"), std::string::npos) << why;
  // With its count, it resumes.
  auto g = spawn_pattern(sys, summing_farm(dir + "/out.txt", 2), with);
  const auto rec = g.recovery();
  stop_like_a_crash(g);
  EXPECT_GT(rec.restored, 0U);
  EXPECT_TRUE(rec.rescaled.empty());
}

/// keyed_running that no longer asks for its keyed state.
struct forgetful_running : st::node<std::int64_t, std::string> {
  static constexpr const char* kind = "keyed_running";
  void consume(std::int64_t& x) { send_next(std::to_string(x)); }
};

TEST(keyed_state, a_restored_keyed_state_its_node_does_not_ask_for_fails_the_graph_naming_it) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("keyed_forgotten");
  const st::options with{.checkpoint = {.dir = dir + "/ckpt", .interval = 10ms}};
  ASSERT_TRUE(crash_after_checkpoints(sys, keyed_pipeline(dir + "/out.txt", 1'000'000), with));
  auto again = spawn_pattern(
      sys,
      troupe::pipeline{
          paced_numbers{0, 1'000'000, 40},
          troupe::farm{forgetful_running{}, 3, troupe::by_key{[](const std::int64_t& x) { return x % 101; }}},
          st::file_sink(dir + "/out.txt")},
      with);
  const auto why = failure_of(again);
  EXPECT_NE(why.find("keyed state 'counts'"), std::string::npos) << why;
}

// ---- the two-phase file sink on its own

TEST(checkpoint_file_sink, what_a_completed_checkpoint_pre_committed_survives_a_crash_once) {
  const auto dir = fresh_dir("sink");
  const auto path = dir + "/out.txt";
  std::string state;
  {
    st::file_sink s{path};
    s.on_start();
    std::string a = "a", b = "b", c = "c";
    s.consume(a);
    s.consume(b);
    st::state_writer w{state, 1};
    s.snapshot(w);  // pre-commit: a, b
    s.consume(c);   // after the barrier: lost with the crash
    EXPECT_EQ(read_file(path), "") << "nothing is committed before the checkpoint completes";
  }  // the crash: no on_stop
  for (int rerun = 0; rerun < 2; ++rerun) {  // recovery itself may be cut short and redone
    st::file_sink s{path};
    st::state_reader r{state, "sink"};
    s.restore(r);
    s.on_start();  // commits what checkpoint 1 pre-committed, drops the rest
    EXPECT_EQ(read_file(path), "a\nb\n");
  }
  st::file_sink s{path};
  st::state_reader r{state, "sink"};
  s.restore(r);
  s.on_start();
  std::string d = "d";
  s.consume(d);
  s.on_stop();
  EXPECT_EQ(read_file(path), "a\nb\nd\n");
  for (auto& e : fs::directory_iterator{dir})
    EXPECT_EQ(e.path().string().find(".part-"), std::string::npos) << "a part file is left: " << e.path();
}

}  // namespace

// ---- graphs split across ranks (local_peers.hpp: the edges and the
// checkpointers' messages as across processes, without the wire)

/// The checkpoints rank 0 completed in `dir` (its files; the other ranks'
/// parts are chk-<id>.rank-<r>.troupe).
std::vector<fs::path> completed_checkpoints(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& f : checkpoint_files(dir))
    if (f.filename().string().find(".rank-") == std::string::npos) out.push_back(f);
  return out;
}

/// The source and half of an ordered farm on rank 0; the other half, the
/// keyed state and the sink on rank 1. The sink gets every element, in the
/// input's order, then the sums.
auto split_pipeline(const std::string& out, std::int64_t n) {
  using troupe::placement;
  return troupe::pipeline{troupe::placed{paced_numbers{0, n, 40}, placement::rank(0)},
                          troupe::placed{troupe::farm{st::map([](std::int64_t x) { return x * 3; }), 2,
                                                      troupe::round_robin{}, troupe::ordered},
                                         placement::ranks("0,1")},
                          troupe::placed{troupe::pipeline{running_sums{}, st::file_sink(out)}, placement::rank(1)}};
}

/// Every rank's graph ends (with or without an error).
void wait_ranks(const std::vector<st::graph>& gs) {
  for (auto& g : gs) try {
      g.wait();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a rank that lost its peer
    }
}

/// Waits (bounded) until rank 0 has completed `n` checkpoints in `dir`.
bool wait_for_completed(const std::string& dir, std::size_t n, const std::vector<st::graph>& gs) {
  for (int i = 0; i < 3000; ++i) {
    if (completed_checkpoints(dir).size() >= n) return true;
    if (std::any_of(gs.begin(), gs.end(), [](const st::graph& g) { return g.done(); })) return false;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

/// Ranks stopped like a crash 4 times and started again, then run to the
/// end: the output must be that of a run without failures.
void split_recovers(const std::string& name, bool unaligned) {
  const auto dir = fresh_dir(name);
  const std::int64_t n = 20'000;
  {
    troupe::actor_system sys{troupe::config{.workers = 2}};
    spawn_pattern(sys, split_pipeline(dir + "/expected.txt", n)).wait();  // the same graph in one process
  }
  const auto expected = read_file(dir + "/expected.txt");
  ASSERT_FALSE(expected.empty());
  const st::options with{.checkpoint = {.dir = dir + "/ckpt", .interval = 10ms, .unaligned = unaligned}};
  std::uint64_t last = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    troupe_test::ranks rs{2};
    auto gs = rs.spawn(split_pipeline(dir + "/out.txt", n), {}, with);
    EXPECT_EQ(gs[0].recovery().restored, gs[1].recovery().restored) << "every rank resumes from the same checkpoint";
    EXPECT_GE(gs[0].recovery().restored, last);
    last = gs[0].recovery().restored;
    const bool completed = wait_for_completed(dir + "/ckpt", 1, gs);
    std::this_thread::sleep_for(std::chrono::milliseconds{10 * (attempt + 1)});
    gs[attempt % 2].cancel();  // one rank "crashes": the other fails, naming the last checkpoint
    wait_ranks(gs);            // (before any ASSERT: no graph may outlive its actor system)
    ASSERT_TRUE(completed) << "attempt " << attempt;
    const auto& survivor = gs[1 - attempt % 2];
    ASSERT_TRUE(survivor.error());
    EXPECT_NE(survivor.error().message().find("last completed checkpoint is"), std::string::npos)
        << survivor.error().message();
  }
  troupe_test::ranks rs{2};
  auto gs = rs.spawn(split_pipeline(dir + "/out.txt", n), {}, with);
  EXPECT_GT(gs[1].recovery().restored, 0u);
  for (auto& g : gs) g.wait();
  EXPECT_TRUE(read_file(dir + "/out.txt") == expected) << "the output differs from a run without failures";
  EXPECT_TRUE(checkpoint_files(dir + "/ckpt").empty()) << "a job that ended normally keeps no checkpoints";
}

TEST(checkpoint_split, ranks_stopped_mid_run_and_started_again_give_the_output_of_a_run_without_failures) {
  split_recovers("split", false);
}

TEST(checkpoint_split, the_same_under_unaligned_barriers) { split_recovers("split_unaligned", true); }

TEST(checkpoint_split, a_checkpoint_with_a_rank_part_missing_is_skipped_and_another_rank_count_refused) {
  const auto dir = fresh_dir("split_missing");
  const auto ckpt = dir + "/ckpt";
  const st::options with{.checkpoint = {.dir = ckpt, .interval = 5ms, .keep = 3}};
  {
    troupe_test::ranks rs{2};
    auto gs = rs.spawn(split_pipeline(dir + "/out.txt", 40'000), {}, with);
    const bool completed = wait_for_completed(ckpt, 2, gs);
    gs[0].cancel();
    wait_ranks(gs);
    ASSERT_TRUE(completed);
  }
  const auto done = completed_checkpoints(ckpt);
  ASSERT_GE(done.size(), 2u);
  // Rank 1's part of the newest one is lost: both ranks take the one before.
  const auto newest = done.back().filename().string();
  const auto newest_id = std::stoull(newest.substr(4, 20));
  ASSERT_TRUE(fs::remove(fs::path{ckpt} / (newest.substr(0, 24) + ".rank-1.troupe")));
  EXPECT_EQ(st::checkpoint_to_resume(ckpt, 0, 2).restored,
            std::stoull(done[done.size() - 2].filename().string().substr(4, 20)));
  std::vector<st::recovery> rec;
  {
    troupe_test::ranks rs{2};
    auto gs = rs.spawn(split_pipeline(dir + "/out.txt", 40'000), {}, with);
    for (auto& g : gs) rec.push_back(g.recovery());
    gs[1].cancel();
    wait_ranks(gs);
  }
  for (auto& r : rec) {
    EXPECT_LT(r.restored, newest_id);
    EXPECT_GT(r.restored, 0u);
  }
  EXPECT_EQ(rec[0].restored, rec[1].restored);
  // Rank 0 says why (rank 1 may not see the newest one at all: rank 0
  // removes its own file of a checkpoint it does not resume from).
  ASSERT_FALSE(rec[0].skipped.empty());
  EXPECT_NE(rec[0].skipped[0].find("missing"), std::string::npos) << rec[0].skipped[0];
  // The same directory for a graph in one process (or of another rank count).
  troupe::actor_system sys{troupe::config{.workers = 2}};
  try {
    spawn_pattern(sys, numbers_pipeline(dir + "/other.txt", 10), {.checkpoint = {.dir = ckpt}});
    FAIL() << "a graph in one process resumed from the checkpoint of two ranks";
  } catch (const st::checkpoint_error& e) {
    EXPECT_NE(std::string{e.what()}.find("split over 2 rank(s)"), std::string::npos) << e.what();
  }
}
