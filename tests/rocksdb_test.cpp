// troupe::rocksdb (troupe/rocksdb.hpp): keyed state in RocksDB. The same
// keyed-state operations as on the heap, checkpoints that share the table
// files that did not change (incremental), restores that leave the
// checkpoint as it was, and graphs stopped mid-run (a crash for their
// checkpoints) that resume with every key's count exact, also from a
// checkpoint taken on the heap.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>

#include "checkpoint_support.hpp"
#include "troupe/rocksdb.hpp"
#include "troupe/troupe.hpp"

namespace {

namespace st = troupe::stream;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using namespace checkpoint_support;

/// The same operations on a keyed state on the heap and in RocksDB.
std::map<std::string, std::int64_t> exercise(st::detail::keyed_home& home) {
  auto& s = home.get<std::string, std::int64_t, std::hash<std::string>>("s");
  s.put("a", 1);
  s.put("b", 2);
  s.update("a", [](std::int64_t& v) { v += 10; });
  EXPECT_EQ(s.update("c", [](std::int64_t& v) { return ++v; }), 1) << "a missing key starts from V{}";
  EXPECT_EQ(s.get("a"), std::optional<std::int64_t>{11});
  EXPECT_FALSE(s.get("zz").has_value());
  EXPECT_TRUE(s.contains("b"));
  s.erase("b");
  EXPECT_FALSE(s.contains("b"));
  EXPECT_EQ(s.size(), 2U);
  std::map<std::string, std::int64_t> all;
  s.for_each([&](const std::string& k, std::int64_t v) { all[k] = v; });
  return all;
}

TEST(rocksdb_keyed_state, does_what_the_heap_does_with_a_cache_in_front_or_none) {
  const auto dir = fresh_dir("rocksdb_ops");
  st::detail::keyed_home heap;
  const auto on_heap = exercise(heap);
  EXPECT_EQ(on_heap, (std::map<std::string, std::int64_t>{{"a", 11}, {"c", 1}}));
  // No cache; a cache smaller than the keys (written back when full); the default.
  for (std::size_t cache : {std::size_t{0}, std::size_t{2}, troupe::rocksdb::options{}.cache_entries}) {
    auto backend = troupe::rocksdb::backend({.cache_entries = cache});
    st::detail::keyed_home rocks;
    rocks.bind(st::detail::keyed_env{backend.get(), dir + "/work" + std::to_string(cache), dir, 0, 0});
    EXPECT_EQ(exercise(rocks), on_heap) << "cache of " << cache;
  }
  auto backend = troupe::rocksdb::backend();
  st::detail::keyed_home rocks;
  rocks.bind(st::detail::keyed_env{backend.get(), dir + "/work", dir, 0, 0});
  exercise(rocks);
  using state = st::keyed_state<std::string, std::int64_t>;
  EXPECT_FALSE((heap.get<state::key_type, state::mapped_type, std::hash<std::string>>("s").in_backend()));
  EXPECT_TRUE((rocks.get<state::key_type, state::mapped_type, std::hash<std::string>>("s").in_backend()));
  EXPECT_THROW((rocks.get<std::string, std::string, std::hash<std::string>>("s")), std::logic_error)
      << "the same name with other types";
}

/// The .sst files of a RocksDB checkpoint directory, by inode.
std::map<ino_t, std::string> table_files(const std::string& dir) {
  std::map<ino_t, std::string> out;
  for (const auto& e : fs::directory_iterator{dir}) {
    if (e.path().extension() != ".sst") continue;
    struct stat st{};
    EXPECT_EQ(::stat(e.path().c_str(), &st), 0) << e.path();
    out[st.st_ino] = e.path().filename().string();
  }
  return out;
}

TEST(rocksdb_keyed_state, a_checkpoint_links_the_files_of_the_last_one_and_writes_only_what_changed) {
  const auto dir = fresh_dir("rocksdb_incremental");
  auto backend = troupe::rocksdb::backend();
  auto table = backend->open(dir + "/work");
  for (int i = 0; i < 1000; ++i) table->put("key" + std::to_string(i), std::string(100, 'x'));
  table->checkpoint(dir + "/one");
  table->put("key1", "changed");
  table->put("new", "1");
  table->checkpoint(dir + "/two");
  backend->wait_saved();  // the checkpoints are taken on the backend's thread
  const auto one = table_files(dir + "/one");
  const auto two = table_files(dir + "/two");
  ASSERT_EQ(one.size(), 1U);
  ASSERT_EQ(two.size(), 2U) << "the second checkpoint adds one table file";
  EXPECT_EQ(two.count(one.begin()->first), 1U) << "and links the first one's (the same file, not a copy)";
  std::uintmax_t first = 0, added = 0;
  for (const auto& [ino, name] : two)
    (ino == one.begin()->first ? first : added) += fs::file_size(fs::path{dir} / "two" / name);
  EXPECT_LT(added * 10, first) << "what the second one wrote is what changed";

  // Restored from checkpoint one: its keys as they were then; writing to
  // the restored table leaves the checkpoint as it was.
  for (int round = 0; round < 2; ++round) {
    auto back = backend->restore(dir + "/restored", dir + "/one", {});
    std::string v;
    ASSERT_TRUE(back->get("key1", v));
    EXPECT_EQ(v, std::string(100, 'x'));
    EXPECT_FALSE(back->get("new", v));
    std::size_t n = 0;
    back->scan([&](std::string_view, std::string_view) { ++n; });
    EXPECT_EQ(n, 1000U);
    back->put("key1", "overwritten after the restore");
    back->checkpoint(dir + "/three");
  }
}

TEST(rocksdb_keyed_state, a_checkpoint_holds_the_state_at_its_barrier_while_the_node_goes_on_writing) {
  // The node's thread posts its changed keys and the checkpoint to the
  // backend's thread and goes on: what it writes after the barrier (straight
  // to RocksDB without a cache, or as keys evicted from a small one) must
  // not reach the checkpoint.
  const auto dir = fresh_dir("rocksdb_async");
  using home_of = st::detail::keyed_home;
  const auto state = [](home_of& h) -> auto& {
    return h.get<std::uint64_t, std::uint64_t, std::hash<std::uint64_t>>("n");
  };
  for (std::size_t cache : {std::size_t{0}, std::size_t{64}, troupe::rocksdb::options{}.cache_entries}) {
    const auto at = dir + "/cache-" + std::to_string(cache);
    auto backend = troupe::rocksdb::backend({.cache_entries = cache});
    std::string saved;
    {
      home_of home;
      home.bind(st::detail::keyed_env{backend.get(), at + "/work", at, 0, 0});
      auto& s = state(home);
      for (std::uint64_t k = 0; k < 1000; ++k) s.put(k, k);
      st::state_writer w{saved, 1};
      home.save(w, 1);
      for (std::uint64_t k = 0; k < 2000; ++k) s.put(k, k + 1'000'000);
      for (std::uint64_t k = 0; k < 100; ++k) s.erase(k);
      home.close();
    }
    backend->wait_saved();
    home_of back;
    back.bind(st::detail::keyed_env{backend.get(), at + "/back", at, 0, 0});
    st::state_reader r{saved, "the saved keyed states"};
    back.load(r);
    auto& s = state(back);
    EXPECT_EQ(s.size(), 1000U) << "cache of " << cache;
    std::size_t wrong = 0;
    for (std::uint64_t k = 0; k < 1000; ++k) wrong += s.get(k) == std::optional<std::uint64_t>{k} ? 0 : 1;
    EXPECT_EQ(wrong, 0U) << "keys whose value is not the one at the barrier, cache of " << cache;
    back.close();
  }
}

st::options with_backend(const std::string& dir, std::shared_ptr<st::state_backend> b) {
  return st::options{.checkpoint = {.dir = dir, .interval = 10ms, .backend = std::move(b)}};
}

TEST(rocksdb_keyed_state, behind_a_by_key_farm_it_survives_crashes_and_the_output_is_that_of_a_run_without_failures) {
  const auto dir = fresh_dir("rocksdb_recovery");
  const auto with = with_backend(dir + "/ckpt", troupe::rocksdb::backend());
  keyed_recovery(dir, with, with);
  EXPECT_TRUE(checkpoint_files(dir + "/ckpt").empty());
  EXPECT_FALSE(fs::exists(dir + "/ckpt/work.rank-0")) << "a job that ended normally leaves no working files";
  for (const auto& e : fs::directory_iterator{dir + "/ckpt"})
    ADD_FAILURE() << "left in the checkpoint directory: " << e.path();
}

TEST(rocksdb_keyed_state, a_by_key_farm_resumes_with_other_replica_counts_from_rocksdb_and_from_the_heap) {
  const auto dir = fresh_dir("rocksdb_rescaled");
  const auto rocks = with_backend(dir + "/ckpt", troupe::rocksdb::backend());
  EXPECT_EQ(keyed_recovery(dir, rocks, rocks, {2, 4, 3}).rescaled.size(), 1U);
  const auto dir2 = fresh_dir("rocksdb_rescaled_from_heap");
  EXPECT_EQ(keyed_recovery(dir2, with_backend(dir2 + "/ckpt", nullptr),
                           with_backend(dir2 + "/ckpt", troupe::rocksdb::backend()), {3, 3, 2})
                .rescaled.size(),
            1U);
}

TEST(rocksdb_keyed_state, a_checkpoint_taken_on_the_heap_resumes_in_rocksdb) {
  const auto dir = fresh_dir("rocksdb_switch");
  keyed_recovery(dir, with_backend(dir + "/ckpt", nullptr), with_backend(dir + "/ckpt", troupe::rocksdb::backend()));
}

TEST(rocksdb_keyed_state, a_checkpoint_taken_in_rocksdb_resumed_without_a_backend_fails_saying_so) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("rocksdb_switch_back");
  ASSERT_TRUE(crash_after_checkpoints(sys, keyed_pipeline(dir + "/out.txt", 1'000'000),
                                      with_backend(dir + "/ckpt", troupe::rocksdb::backend())));
  const auto why =
      failure_of(spawn_pattern(sys, keyed_pipeline(dir + "/out.txt", 1'000'000), with_backend(dir + "/ckpt", nullptr)));
  EXPECT_NE(why.find("give checkpoint.backend the backend it ran with"), std::string::npos) << why;
}

TEST(rocksdb_keyed_state, old_checkpoints_take_their_table_files_with_them) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto dir = fresh_dir("rocksdb_prune");
  auto with = with_backend(dir + "/ckpt", troupe::rocksdb::backend());
  with.checkpoint.keep = 2;
  ASSERT_TRUE(crash_after_checkpoints(sys, keyed_pipeline(dir + "/out.txt", 1'000'000), with, 2, 100ms));
  std::set<std::string> files, state_dirs;
  for (const auto& e : fs::directory_iterator{dir + "/ckpt"}) {
    const auto name = e.path().filename().string();
    if (e.path().extension() == ".troupe") files.insert(name.substr(0, 24));
    if (e.path().extension() == ".state") state_dirs.insert(name.substr(0, 24));
  }
  EXPECT_LE(files.size(), 2U);
  // Each checkpoint kept has its table files; besides them, at most the
  // one in flight at the crash (a rerun removes it).
  for (const auto& f : files) EXPECT_EQ(state_dirs.count(f), 1U) << f;
  std::size_t others = 0;
  for (const auto& d : state_dirs) others += files.count(d) == 0 ? 1 : 0;
  EXPECT_LE(others, 1U);
}

}  // namespace
