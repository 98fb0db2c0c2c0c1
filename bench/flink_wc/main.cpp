// flink_wc: the same word count on troupe and on Apache Flink, on this
// machine, in the same run: without checkpoints, and with a checkpoint
// every second on the heap and in RocksDB. Flink is the anchor the
// checkpoint targets are set against (docs/performance.md, "Checkpoints").
//
// The input: apps/data/book.dat `copies` times.
//   troupe: troupe-wc (troupe_apps::wc::run, in this process), the input
//           loaded into memory and replayed `copies` times (--passes),
//           parallelism 1,2,2,1 (source, splitter, counter, sink), 2
//           workers; its counters keep each word's count as keyed state.
//   flink:  bench/flink/WcJob.java (Apache Flink 2.3 from PyPI, Debian's
//           OpenJDK 17; a local mini cluster, parallelism 2): a file source
//           of the same lines from a file (the page cache after the first
//           run), a flatMap splitting on spaces, keyBy(word), a
//           KeyedProcessFunction with ValueState<Long>, a discarding sink.
//           Set up by `scripts/bench --flink flink_wc` (bench/flink/setup.sh:
//           a virtual environment of about 850 MB under build-flink/); skipped
//           where it is not set up.
// Both emit (word, count) for every word: the same work per word. troupe
// reads its lines from memory, Flink from a file: Flink's reading is in its
// figure, troupe's is not.
//
// params:
//   copies  book.dat's repetitions (116: 50 MB, 9.6 M words)
// impls:
//   troupe, troupe_heap_1s, troupe_rocksdb_1s
//   flink, flink_heap_1s, flink_rocksdb_1s
//   (*_1s: a checkpoint every second into a fresh directory under $TMPDIR;
//   RocksDB: troupe::rocksdb / Flink's incremental RocksDB backend)
// Measured region: troupe: the app's timed run (from the spawn to the last
// sink's drain; loading the input is outside it); Flink: the job's net run
// time as Flink reports it (JobExecutionResult::getNetRuntime: the JVM's
// and the mini cluster's start are outside it).
// Figure: words/s. Extras: checkpoints (troupe: completed during the run).
// Check: troupe's sink saw every word; Flink's job ended normally.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/harness.hpp"
#include "common/temp_dir.hpp"
#include "wc/wc.hpp"

namespace {

namespace fs = std::filesystem;

const std::string book = TROUPE_APPS_DATA "/book.dat";

/// Words in one copy of the book (split on single spaces, empty tokens
/// skipped, as both jobs do).
std::uint64_t words_per_copy() {
  std::ifstream in{book};
  std::uint64_t n = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words{line};
    for (std::string w; std::getline(words, w, ' ');) n += w.empty() ? 0 : 1;
  }
  return n;
}

bench::sample run_troupe(const bench::params& p, const char* backend) {
  const bench::temp_dir where{"troupe_flink_wc_"};
  troupe_apps::cli c;
  c.input = book;
  c.passes = static_cast<std::uint64_t>(p.get("copies"));
  c.parallelism = {1, 2, 2, 1};
  if (backend != nullptr) {
    c.checkpoint_dir = where.path() + "/ckpt";
    c.checkpoint_interval_ms = 1000;
    c.state_backend = backend;
  }
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto r = troupe_apps::wc::run(sys, c).result;
  const auto words = words_per_copy() * c.passes;
  if (r.sink_tuples != words)
    throw std::runtime_error("troupe-wc counted " + std::to_string(r.sink_tuples) + " words of " +
                             std::to_string(words));
  bench::sample s;
  s.wall_s = r.elapsed_s;
  s.add("words_per_s", static_cast<double>(words) / r.elapsed_s, "words/s", true);
  s.add("checkpoints", static_cast<double>(r.checkpoints), "");
  return s;
}

/// Where bench/flink/setup.sh put Flink's jars and the job (build-flink/).
struct flink_setup {
  std::string lib, jar;
};
flink_setup find_flink() {
  const char* root = std::getenv("TROUPE_FLINK_DIR");
  const fs::path dir = root != nullptr ? fs::path{root} : fs::path{TROUPE_SOURCE_DIR} / "build-flink";
  flink_setup f;
  std::ifstream lib{dir / "lib_dir"};
  std::getline(lib, f.lib);
  f.jar = (dir / "wc.jar").string();
  if (f.lib.empty() || !fs::exists(f.jar) || !fs::exists(f.lib))
    throw bench::not_available("Apache Flink is not set up (scripts/bench --flink flink_wc sets it up in " +
                               dir.string() + ")");
  return f;
}

bench::sample run_flink(const bench::params& p, const char* mode) {
  const auto f = find_flink();
  const bench::temp_dir where{"troupe_flink_wc_"};
  const auto copies = p.get("copies");
  const auto input = where.path() + "/input.txt";
  {
    std::ifstream in{book, std::ios::binary};
    const std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
    std::ofstream out{input, std::ios::binary};
    for (std::int64_t i = 0; i < copies; ++i) out << text << (text.empty() || text.back() == '\n' ? "" : "\n");
  }
  const auto log = where.path() + "/job.log";
  const std::string cmd = "java -cp '" + f.lib + "/*:" + f.jar + "' WcJob " + mode + " '" + input + "' 2 '" +
                          where.path() + "/ckpt' > '" + log + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream out{log};
  const std::string text{std::istreambuf_iterator<char>{out}, std::istreambuf_iterator<char>{}};
  const auto at = text.rfind("net_ms ");
  if (rc != 0 || at == std::string::npos)
    throw std::runtime_error("the Flink job failed (exit " + std::to_string(WEXITSTATUS(rc)) +
                             "): " + text.substr(text.size() > 2000 ? text.size() - 2000 : 0));
  const double net_s = std::stod(text.substr(at + 7)) / 1000.0;
  const auto words = words_per_copy() * static_cast<std::uint64_t>(copies);
  bench::sample s;
  s.wall_s = net_s;
  s.add("words_per_s", static_cast<double>(words) / net_s, "words/s", true);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "flink_wc";
  s.description =
      "word count on troupe and on Apache Flink, no checkpoints and a checkpoint every second (heap, RocksDB), "
      "words/s";
  s.impls = {{"troupe", [](const bench::params& p) { return run_troupe(p, nullptr); }},
             {"troupe_heap_1s", [](const bench::params& p) { return run_troupe(p, "heap"); }},
             {"troupe_rocksdb_1s", [](const bench::params& p) { return run_troupe(p, "rocksdb"); }},
             {"flink", [](const bench::params& p) { return run_flink(p, "none"); }},
             {"flink_heap_1s", [](const bench::params& p) { return run_flink(p, "heap"); }},
             {"flink_rocksdb_1s", [](const bench::params& p) { return run_flink(p, "rocksdb"); }}};
  s.primary = bench::extra_metric("words_per_s", "words/s", true, "words_per_s");
  s.variants = [](bool full) {
    return std::vector<bench::variant>{{full ? "116 copies" : "58 copies", {{"copies", full ? 116 : 58}}}};
  };
  s.default_runs = 3;
  s.timeout_s = 300;
  return bench::run_main(argc, argv, s);
}
