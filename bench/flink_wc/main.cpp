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

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/harness.hpp"
#include "common/temp_dir.hpp"
#include "flink/flink.hpp"
#include "wc/wc.hpp"

namespace {

namespace flink = bench::flink;

bench::sample run_troupe(const bench::params& p, const char* backend) {
  const bench::temp_dir where{"troupe_flink_wc_"};
  troupe_apps::cli c;
  c.input = flink::book;
  c.passes = static_cast<std::uint64_t>(p.get("copies"));
  c.parallelism = {1, 2, 2, 1};
  if (backend != nullptr) {
    c.checkpoint_dir = where.path() + "/ckpt";
    c.checkpoint_interval_ms = 1000;
    c.state_backend = backend;
  }
  troupe::actor_system sys{troupe::config{.workers = 2}};
  const auto r = troupe_apps::wc::run(sys, c).result;
  const auto words = flink::words_per_copy() * c.passes;
  if (r.sink_tuples != words)
    throw std::runtime_error("troupe-wc counted " + std::to_string(r.sink_tuples) + " words of " +
                             std::to_string(words));
  bench::sample s;
  s.wall_s = r.elapsed_s;
  s.add("words_per_s", static_cast<double>(words) / r.elapsed_s, "words/s", true);
  s.add("checkpoints", static_cast<double>(r.checkpoints), "");
  return s;
}

bench::sample run_flink(const bench::params& p, const char* mode) {
  const auto f = flink::find();
  const bench::temp_dir where{"troupe_flink_wc_"};
  const auto copies = p.get("copies");
  const auto input = where.path() + "/input.txt";
  flink::write_copies(input, copies);
  const auto log = where.path() + "/job.log";
  const std::string cmd =
      "java -cp '" + f.lib + "/*:" + f.jar + "' WcJob " + mode + " '" + input + "' 2 '" + where.path() + "/ckpt'";
  const auto line = flink::run_for(cmd, log, "net_ms ", "the Flink job");
  const double net_s = std::stod(line.substr(7)) / 1000.0;
  const auto words = flink::words_per_copy() * static_cast<std::uint64_t>(copies);
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
