// app.hpp: what the four streaming applications share: a source that replays
// an in-memory input, the end-of-run report, the sink's output file, and the
// body of main() (flags, SIGINT/SIGTERM, progress line, exit status).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <troupe/troupe.hpp>

#include "cli.hpp"
#include "connectors.hpp"
#include "split.hpp"

#if TROUPE_APPS_ROCKSDB
#include <troupe/rocksdb.hpp>
#endif
#if TROUPE_APPS_METRICS
#include <troupe/metrics/exporter.hpp>
#endif

namespace troupe_apps {

namespace detail {
inline std::atomic<bool> stop_flag{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the stop flag is set from a signal handler");
}  // namespace detail

/// Whether the run was asked to end early: by SIGINT or SIGTERM once
/// main_of has installed its handlers, or by request_stop(). Sources end
/// their stream at their next check (replay_source: within 64 tuples, or
/// within 100 ms when paced), so the graph drains and the run reports.
inline bool stop_requested() noexcept { return detail::stop_flag.load(std::memory_order_relaxed); }
inline void request_stop() noexcept { detail::stop_flag.store(true, std::memory_order_relaxed); }

/// What replay_source does to a tuple before sending it: nothing.
struct no_prepare {
  template <class T>
  void operator()(T&, std::uint64_t /*pass*/, troupe::stream::emitter<T>&) {}
};

/// Replays `data` (parsed at load time) cyclically, stamping each tuple with
/// its emission time: for `passes` passes, or until `duration` seconds have
/// passed, whichever the flags ask for, or until stop_requested(); at `rate`
/// tuples per second, or at full speed. Each replica replays the whole input.
/// `prepare(v, pass, out)` may adjust a tuple to its pass (0, 1, ...) and
/// send markers before it.
template <class T, class Prepare = no_prepare>
class replay_source : public troupe::stream::node<void, T> {
 public:
  static constexpr const char* kind = "source";
  replay_source(std::shared_ptr<const std::vector<T>> data, const cli& c, Prepare prepare = {})
      : data_{std::move(data)},
        duration_ns_{duration_ns(c.duration)},
        rate_{c.rate},
        passes_{c.passes},
        stops_{c.checkpoint_dir.empty()},
        prepare_{std::move(prepare)} {}

  void on_start() { start_ = troupe::stream::now(); }

  bool produce() {
    const auto n = data_->size();
    if (passes_ != 0 && pass_ == passes_) return false;
    if ((sent_ & 63) == 0 || rate_ > 0) {
      if (stops_ && stop_requested()) return false;
      const auto t = troupe::stream::now();
      const auto elapsed = t - start_;
      if (duration_ns_ != 0 && elapsed >= duration_ns_) return false;
      // Paced: not yet time for the next tuple; the runner comes back then,
      // or sooner, to see a stop request or the end of the duration in time.
      if (rate_ > 0) {
        const double ahead = static_cast<double>(sent_) * 1e9 / rate_ - static_cast<double>(elapsed);
        if (ahead > 0) {
          this->pause_until(t + static_cast<std::uint64_t>(std::min(ahead, max_pause_ns)));
          return true;
        }
      }
    }
    T v = (*data_)[pos_];
    prepare_(v, pass_, *this);
    if (++pos_ == n) {
      pos_ = 0;
      ++pass_;
    }
    ++sent_;
    v.stamp = troupe::stream::now();
    this->send_next(std::move(v));
    return true;
  }

  // Its position, for checkpoints (--checkpoint-dir), and prepare's state
  // if it keeps one (save/load). A restarted paced source catches up at
  // full speed.
  void snapshot(troupe::stream::state_writer& out) const {
    out.write(pos_);
    out.write(pass_);
    out.write(sent_);
    if constexpr (requires { prepare_.save(out); }) prepare_.save(out);
  }
  void restore(troupe::stream::state_reader& in) {
    in.read(pos_);
    in.read(pass_);
    in.read(sent_);
    if (pos_ >= data_->size()) in.fail("a position past the input's " + std::to_string(data_->size()) + " tuples");
    if constexpr (requires { prepare_.load(in); }) prepare_.load(in);
  }

 private:
  // A paced source sleeps at most this long between checks (a slow rate).
  static constexpr double max_pause_ns = 100e6;
  // 0: no limit; else at least 1 ns (a tiny duration still ends), at most ~570 years.
  static std::uint64_t duration_ns(double s) {
    if (!(s > 0)) return 0;
    return s >= 1.8e10 ? ~std::uint64_t{0} : std::max<std::uint64_t>(1, static_cast<std::uint64_t>(s * 1e9));
  }
  std::shared_ptr<const std::vector<T>> data_;
  std::uint64_t duration_ns_;
  double rate_;
  std::uint64_t passes_;
  bool stops_;  // ends at stop_requested() (with checkpoints the run is cancelled instead)
  Prepare prepare_;
  std::uint64_t start_ = 0, sent_ = 0, pass_ = 0;
  std::size_t pos_ = 0;
};

/// Lines written by the sink replicas (one at a time) to --output.
class output_file {
 public:
  explicit output_file(const std::string& path);
  bool enabled() const noexcept { return static_cast<bool>(out_); }
  void line(const std::string& s);
  std::ofstream& stream() { return *out_; }

 private:
  std::mutex mtx_;
  std::unique_ptr<std::ofstream> out_;
};

/// The base of an application's sink: its lines go to --output (one file
/// shared by the replicas), or, with --checkpoint-dir, exactly once through a
/// stream::file_sink of each replica's own (the first writes --output, the
/// others --output.N), or to a NATS subject or a Kafka topic (--output
/// nats://... or kafka://..., exactly once with --checkpoint-dir:
/// connectors.hpp).
template <class In>
class app_sink : public troupe::stream::node<In, void> {
 public:
  static constexpr const char* kind = "sink";
  output_file* out = nullptr;
  std::string exactly_once;        // --output with --checkpoint-dir (else "")
  std::function<void()> on_first;  // cli::on_first_output, until this replica's first element

  /// Writes to `file`, or exactly once with --checkpoint-dir, or to a log;
  /// takes the flags' first-output hook.
  void bind(output_file& file, const cli& c) {
    out = &file;
    on_first = c.on_first_output;
    if (is_nats(c.output)) {
#if TROUPE_APPS_NATS
      nats_.emplace(nats_output(c), text_encoder{});
      logs_ = true;
      return;
#else
      throw missing_module("output", c.output);
#endif
    }
    if (is_kafka(c.output)) {
#if TROUPE_APPS_KAFKA
      kafka_.emplace(kafka_output(c), text_encoder{});
      logs_ = true;
      return;
#else
      throw missing_module("output", c.output);
#endif
    }
    if (!c.checkpoint_dir.empty()) exactly_once = c.output;
  }

  void on_start() {
    with_log(
        [this](auto& w) { w.start(this->replica_index(), this->checkpointing(), this->hears_final_checkpoint()); });
    if (exactly_once.empty()) return;
    ensure();
    tx_->on_start();
  }
  void on_stop() {
    with_log([](auto& w) { w.stop(); });
    if (tx_) tx_->on_stop();
  }
  void snapshot(troupe::stream::state_writer& w) {
    with_log([&w](auto& l) { l.snapshot(w); });
    if (tx_) tx_->snapshot(w);
  }
  void restore(troupe::stream::state_reader& r) {
    with_log([&r](auto& l) { l.restore(r); });
    if (exactly_once.empty()) return;
    ensure();
    tx_->restore(r);
  }
  void on_checkpoint_complete(std::uint64_t id) {
    with_log([id](auto& w) { w.complete(id); });
    if (tx_) tx_->on_checkpoint_complete(id);
  }

 protected:
  /// Each application's consume() calls this first (cli::on_first_output).
  void arrived() {
    if (on_first) [[unlikely]]
      std::exchange(on_first, nullptr)();
  }
  bool writes() const noexcept { return logs_ || tx_.has_value() || out->enabled(); }
  void line(std::string s) {
    if (logs_) return with_log([&s](auto& w) { w.write(s); });
    if (tx_) tx_->consume(s);
    else out->line(s);
  }

 private:
  void ensure() {
    if (!tx_)
      tx_.emplace(this->replica_index() == 0 ? exactly_once
                                             : exactly_once + "." + std::to_string(this->replica_index()));
  }
  /// f(writer) for the log writer of --output nats:// or kafka://, if any
  /// (the two share start/write/stop/snapshot/restore/complete).
  template <class F>
  void with_log([[maybe_unused]] F f) {
#if TROUPE_APPS_NATS
    if (nats_) f(*nats_);
#endif
#if TROUPE_APPS_KAFKA
    if (kafka_) f(*kafka_);
#endif
  }
  std::optional<troupe::stream::file_sink> tx_;
  bool logs_ = false;  // --output names a log: a writer below takes the lines
#if TROUPE_APPS_NATS
  std::optional<nats_line_writer> nats_;
#endif
#if TROUPE_APPS_KAFKA
  std::optional<kafka_line_writer> kafka_;
#endif
};

/// The figures of a finished run.
struct run_result {
  std::string app;
  double elapsed_s = 0;
  std::uint64_t source_tuples = 0;
  std::uint64_t sink_tuples = 0;
  std::uint64_t malformed = 0;  // input lines skipped at load time
  troupe::stream::latency_histogram latency;
  std::vector<std::size_t> parallelism;
  bool interrupted = false;       // ended early by stop_requested() (SIGINT, SIGTERM)
  std::uint64_t checkpoints = 0;  // completed during the run (--checkpoint-dir)
  std::string part;               // a split run: "rank 0 of 2, placement 0;0;1;1" (else empty)
  bool report = true;             // false: nothing ran (a generator mode), print nothing

  double source_rate() const { return elapsed_s > 0 ? static_cast<double>(source_tuples) / elapsed_s : 0; }
  double sink_rate() const { return elapsed_s > 0 ? static_cast<double>(sink_tuples) / elapsed_s : 0; }
  /// source/sink throughput and latency percentiles (us), one paragraph.
  void print(std::ostream& out) const;
  std::string to_json() const;
};

/// Collects the figures of a finished graph: sources are the nodes of kind
/// "source" (or "nats_source", "kafka_source": a log input), sinks those of
/// kind "sink".
run_result collect(const std::string& app, const troupe::stream::graph_metrics& m, std::uint64_t malformed,
                   std::vector<std::size_t> parallelism, double elapsed_s);

/// The tuples of `lines`: parse(line, T&) -> bool; a false line is skipped
/// and counted in `malformed`. Throws when no line is valid.
template <class T, class Parse>
std::shared_ptr<std::vector<T>> load(const std::vector<std::string>& lines, Parse parse, std::uint64_t& malformed) {
  auto data = std::make_shared<std::vector<T>>();
  for (auto& l : lines) {
    T v{};
    if (parse(l, v)) data->push_back(std::move(v));
    else ++malformed;
  }
  if (data->empty())
    throw std::runtime_error("no valid tuple in the input (" + std::to_string(malformed) + " malformed lines)");
  return data;
}

/// While it lives, a line on stderr once a second with the tuples that left
/// the sources and reached the sinks so far (overwritten in place: meant for
/// a terminal); the line is cleared at the end.
class progress_line {
 public:
  progress_line(std::string app, const troupe::stream::graph& g);
  ~progress_line();
  progress_line(const progress_line&) = delete;
  progress_line& operator=(const progress_line&) = delete;

 private:
  std::string app_;
  const troupe::stream::graph& graph_;
  std::mutex mtx_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

/// Runs `body` (it starts the graph, waits for its end and returns
/// watch_to_end's finished_graph) between the flags' run hooks, timed, and collects the figures.
template <class Body>
run_result timed_run(const std::string& app, const cli& c, std::size_t operators, std::uint64_t malformed, Body body) {
  if (c.on_run_start) c.on_run_start();
  const auto start = std::chrono::steady_clock::now();
  const auto [m, checkpoints] = body();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (c.on_run_end) c.on_run_end();
  std::vector<std::size_t> par;
  for (std::size_t i = 0; i < operators; ++i) par.push_back(c.replicas(i));
  auto r = collect(app, m, malformed, std::move(par), elapsed);
  r.interrupted = stop_requested();
  r.checkpoints = checkpoints;
  return r;
}

/// --metrics-port: an exporter serving this run's graph (it prints where on
/// stderr), or none. Holds nothing without the flag.
class metrics_server {
 public:
  metrics_server(troupe::actor_system& sys, const std::string& app, const cli& c);
  ~metrics_server();
  metrics_server(const metrics_server&) = delete;
  metrics_server& operator=(const metrics_server&) = delete;
  template <class G>
  void watch(const G& g) {
#if TROUPE_APPS_METRICS
    if (exporter_) exporter_->watch(app_, g);
#else
    (void)g;
#endif
  }

 private:
  std::string app_;
#if TROUPE_APPS_METRICS
  std::unique_ptr<troupe::metrics::exporter> exporter_;
#endif
};

/// Serves `g` (--metrics-port) and shows its progress (--progress) until it
/// ends; its metrics then.
/// With --checkpoint-dir, SIGINT and SIGTERM cancel the graph instead of
/// draining it: the checkpoints stay, and the same command resumes.
/// What watch_to_end leaves: the graph's metrics, and how many checkpoints
/// completed while it ran.
struct finished_graph {
  troupe::stream::graph_metrics metrics;
  std::uint64_t checkpoints = 0;
};
inline finished_graph watch_to_end(const std::string& app, const cli& c, metrics_server& served,
                                   const troupe::stream::graph& g) {
  served.watch(g);
  std::unique_ptr<progress_line> progress;
  if (c.progress) progress = std::make_unique<progress_line>(app, g);
  if (!c.checkpoint_dir.empty()) {
    const auto r = g.recovery();
    for (auto& why : r.skipped) std::cerr << app << ": skipped " << why << '\n';
    if (r.restored != 0)
      std::cerr << app << ": resumed from checkpoint " << r.restored << " in " << c.checkpoint_dir << '\n';
    for (auto& stage : r.rescaled) std::cerr << app << ": rescaled " << stage << '\n';
    while (!g.wait_for(std::chrono::milliseconds{50}))
      if (stop_requested()) g.cancel();
  }
  g.wait();
  progress.reset();
  return {g.metrics(), g.checkpoints().completed};
}

/// With --checkpoint-dir: a run that will start afresh (no checkpoint to
/// resume from) starts its --output empty too, before the graph runs. Its
/// sinks do so for the lines they write; this is for what the application
/// appends after the graph's end (wc's final counts), on a rank without the
/// sink that writes --output: a job rerun from the start must not find them
/// twice. (A rank whose part has ended removes its checkpoints, so no later
/// run resumes after them.)
inline void start_output_afresh(const cli& c, std::size_t rank, std::size_t ranks) {
  if (c.checkpoint_dir.empty() || c.output.empty() || is_log(c.output)) return;
  if (troupe::stream::checkpoint_to_resume(c.checkpoint_dir, rank, ranks).restored != 0) return;
  std::ofstream f{c.output, std::ios::trunc};
  if (!f) throw std::runtime_error("cannot write the --output file '" + c.output + "'");
}

#if TROUPE_APPS_NET
/// This process's part of a split run (split.hpp).
template <class P>
run_result run_split(troupe::actor_system& sys, const std::string& app, const P& pattern, const cli& c,
                     std::size_t operators, std::uint64_t malformed, const troupe::stream::options& o) {
  split_setup s = parse_split(c, app);
  start_output_afresh(c, s.rank, s.cluster.peers.size());
  troupe::net::node node{sys, s.node};
  troupe::net::cluster cl{sys, node, s.cluster};
  metrics_server served{sys, app, c};
  auto r = timed_run(app, c, operators, malformed, [&] {
    return watch_to_end(app, c, served,
                        troupe::net::split(cl, pattern, s.stages, {.name = app, .edges = {}, .stream = o}));
  });
  r.part = "rank " + std::to_string(s.rank) + " of " + std::to_string(cl.size()) + ", placement " + s.placement_text;
  return r;
}
#endif

/// Runs an application's graph to its end with the flags' batch size and
/// latency measured on every tuple, and collects its figures (with a
/// progress line when c.progress). With --peers, this process's part of
/// the graph split across processes (split.hpp).
template <class P>
run_result run_graph(troupe::actor_system& sys, const std::string& app, P pattern, const cli& c, std::size_t operators,
                     std::uint64_t malformed) {
  troupe::stream::options o;
  o.batch = c.batch;
  o.latency_sample = 1;
  if (!c.checkpoint_dir.empty()) {
    o.checkpoint = {.dir = c.checkpoint_dir,
                    .interval = std::chrono::milliseconds{static_cast<std::int64_t>(c.checkpoint_interval_ms)}};
    if (c.state_backend == "rocksdb") {
#if TROUPE_APPS_ROCKSDB
      o.checkpoint.backend = troupe::rocksdb::backend();
#else
      throw usage_error("--state-backend rocksdb: this build has no troupe::rocksdb (librocksdb-dev)");
#endif
    }
  }
  if (split_requested(c)) {
#if TROUPE_APPS_NET
    return run_split(sys, app, pattern, c, operators, malformed, o);
#else
    throw usage_error("--peers: this build has no troupe::net (ZeroMQ), so the graph runs in one process only");
#endif
  }
  start_output_afresh(c, 0, 1);
  metrics_server served{sys, app, c};
  return timed_run(app, c, operators, malformed,
                   [&] { return watch_to_end(app, c, served, troupe::spawn_pattern(sys, std::move(pattern), o)); });
}

/// The largest --lines a generator accepts (the lines are built in memory).
inline constexpr std::uint64_t max_generated_lines = 100'000'000;

/// --lines as a whole number from 1 to max_generated_lines.
std::size_t lines_flag(const cli& c);

/// The --generate PATH mode: writes `lines` to PATH (an error names it and
/// the system's reason), says so on stdout; the result prints nothing.
run_result write_generated(const std::string& program, const std::string& path, const std::vector<std::string>& lines,
                           const char* what);

/// The actor system of an application's main(): troupe's defaults, then the
/// TROUPE_* environment variables (a bad value ends the run with a message).
inline troupe::config app_config() { return troupe::config{}.load_env(); }

/// The body of every main(): parses the flags, runs `run(cli)`, prints and
/// writes the results. Bad flags and unreadable input end with a message and
/// exit status 2. Except in a --generate mode, SIGINT and SIGTERM stop the
/// sources (stop_requested()): the graph drains, the summary is printed, the
/// --json and --output files are written, and the exit status is 128 + the
/// signal's number (130, 143); a second signal exits at once with 128 + its
/// number, writing nothing. c.progress is set when stderr is a terminal.
template <class Run>
int main_of(const std::string& program, const std::vector<std::string>& operators, const std::string& default_input,
            int argc, char** argv, Run run, const std::vector<app_flag>& extra = {});
/// Prints "program: message" on stderr (and, for a usage error, where the
/// flags are described); returns exit status 2.
int fail(const std::string& program, const std::string& message, bool usage_hint);
/// Installs the SIGINT/SIGTERM handlers of main_of and sets c.progress.
void prepare_run(const std::string& program, cli& c);
/// 0, or 128 + the signal that stopped the run.
int stop_status() noexcept;
/// The --json file, opened (truncated) before the run so that a bad path is
/// reported before the run rather than after it; null without --json.
std::unique_ptr<std::ofstream> open_json(const std::string& path);

template <class Run>
int main_of(const std::string& program, const std::vector<std::string>& operators, const std::string& default_input,
            int argc, char** argv, Run run, const std::vector<app_flag>& extra) {
  cli c;
  try {
    c = cli::parse(argc, argv, operators, default_input, extra);
  } catch (const usage_error& e) {
    return fail(program, e.what(), true);
  }
  if (c.help) {
    std::fputs(cli::usage(program, operators, default_input, extra).c_str(), stdout);
    return 0;
  }
  try {
    const auto gen = c.extra.find("generate");
    if (gen == c.extra.end() || gen->second.empty()) prepare_run(program, c);
    auto json = open_json(c.json);
    run_result r = run(c);
    if (!r.report) return 0;
    r.print(std::cout);
    std::cout.flush();
    if (json) {
      *json << r.to_json() << '\n';
      json->close();
      if (!*json) return fail(program, "cannot write the --json file '" + c.json + "'", false);
    }
    return stop_status();
  } catch (const usage_error& e) {
    return fail(program, e.what(), true);
  } catch (const std::exception& e) {
    return fail(program, e.what(), false);
  }
}

}  // namespace troupe_apps
