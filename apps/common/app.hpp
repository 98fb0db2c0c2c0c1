// app.hpp: what the four streaming applications share: a source that replays
// an in-memory input, the end-of-run report and the sink's output file.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <troupe/troupe.hpp>

#include "cli.hpp"

namespace troupe_apps {

/// What replay_source does to a tuple before sending it: nothing.
struct no_prepare {
  template <class T>
  void operator()(T&, std::uint64_t /*pass*/, troupe::stream::emitter<T>&) {}
};

/// Replays `data` (parsed at load time) cyclically, stamping each tuple with
/// its emission time: for `passes` passes, or until `duration` seconds have
/// passed, whichever the flags ask for; at `rate` tuples per second, or at
/// full speed. Each replica replays the whole input. `prepare(v, pass, out)`
/// may adjust a tuple to its pass (0, 1, ...) and send markers before it.
template <class T, class Prepare = no_prepare>
class replay_source : public troupe::stream::node<void, T> {
 public:
  static constexpr const char* kind = "source";
  replay_source(std::shared_ptr<const std::vector<T>> data, const cli& c, Prepare prepare = {})
      : data_{std::move(data)},
        duration_ns_{static_cast<std::uint64_t>(c.duration * 1e9)},
        rate_{c.rate},
        passes_{c.passes},
        prepare_{std::move(prepare)} {}

  void on_start() { start_ = troupe::stream::now(); }

  bool produce() {
    const auto n = data_->size();
    if (passes_ != 0 && sent_ == passes_ * n) return false;
    if ((sent_ & 63) == 0 || rate_ > 0) {
      const auto t = troupe::stream::now();
      if (duration_ns_ != 0 && t - start_ >= duration_ns_) return false;
      // Paced: not yet time for the next tuple; the runner comes back then.
      if (rate_ > 0) {
        const auto due = start_ + static_cast<std::uint64_t>(static_cast<double>(sent_) * 1e9 / rate_);
        if (t < due) {
          this->pause_until(due);
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

 private:
  std::shared_ptr<const std::vector<T>> data_;
  std::uint64_t duration_ns_;
  double rate_;
  std::uint64_t passes_;
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

/// The figures of a finished run.
struct run_result {
  std::string app;
  double elapsed_s = 0;
  std::uint64_t source_tuples = 0;
  std::uint64_t sink_tuples = 0;
  std::uint64_t malformed = 0;  // input lines skipped at load time
  troupe::stream::latency_histogram latency;
  std::vector<std::size_t> parallelism;
  bool report = true;  // false: nothing ran (a generator mode), print nothing

  double source_rate() const { return elapsed_s > 0 ? static_cast<double>(source_tuples) / elapsed_s : 0; }
  double sink_rate() const { return elapsed_s > 0 ? static_cast<double>(sink_tuples) / elapsed_s : 0; }
  /// source/sink throughput and latency percentiles (us), one paragraph.
  void print(std::ostream& out) const;
  std::string to_json() const;
};

/// Collects the figures of a finished graph: sources are the nodes of kind
/// "source", sinks those of kind "sink".
run_result collect(const std::string& app, const troupe::stream::graph& g, std::uint64_t malformed,
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

/// Runs an application's graph to its end with the flags' batch size and
/// latency measured on every tuple, and collects its figures.
template <class P>
run_result run_graph(troupe::actor_system& sys, const std::string& app, P pattern, const cli& c, std::size_t operators,
                     std::uint64_t malformed) {
  troupe::stream::options o;
  o.batch = c.batch;
  o.latency_sample = 1;
  const auto start = std::chrono::steady_clock::now();
  auto g = troupe::spawn_pattern(sys, std::move(pattern), o);
  g.wait();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<std::size_t> par;
  for (std::size_t i = 0; i < operators; ++i) par.push_back(c.replicas(i));
  return collect(app, g, malformed, std::move(par), elapsed);
}

/// The --generate PATH mode of an application with a generator: writes
/// generate(n) (n from --lines) to PATH; the result prints nothing.
template <class Generate>
run_result write_generated(const std::string& program, const cli& c, const char* what, Generate generate) {
  std::size_t n = 0;
  try {
    n = std::stoul(c.extra.at("lines"));
  } catch (const std::exception&) {
    throw usage_error("--lines: expected a number, got '" + c.extra.at("lines") + "'");
  }
  const auto& path = c.extra.at("generate");
  std::ofstream f{path};
  for (auto& l : generate(n)) f << l << '\n';
  if (!f) throw std::runtime_error("cannot write '" + path + "'");
  std::printf("%s: wrote %zu %s to %s\n", program.c_str(), n, what, path.c_str());
  run_result r;
  r.report = false;
  return r;
}

/// The actor system of an application's main(): troupe's defaults, then the
/// TROUPE_* environment variables (a bad value ends the run with a message).
inline troupe::config app_config() { return troupe::config{}.load_env(); }

/// The body of every main(): parses the flags, runs `run(cli)`, prints and
/// writes the results; bad flags and unreadable input end with a message and
/// exit status 2.
template <class Run>
int main_of(const std::string& program, const std::vector<std::string>& operators, const std::string& default_input,
            int argc, char** argv, Run run, const std::map<std::string, std::string>& extra = {});
int fail(const std::string& program, const std::string& message, bool show_usage,
         const std::vector<std::string>& operators);

template <class Run>
int main_of(const std::string& program, const std::vector<std::string>& operators, const std::string& default_input,
            int argc, char** argv, Run run, const std::map<std::string, std::string>& extra) {
  cli c;
  try {
    c = cli::parse(argc, argv, operators, default_input, extra);
  } catch (const usage_error& e) {
    return fail(program, e.what(), true, operators);
  }
  if (c.help) {
    std::fputs(cli::usage(program, operators).c_str(), stdout);
    return 0;
  }
  try {
    run_result r = run(c);
    if (!r.report) return 0;
    r.print(std::cout);
    if (!c.json.empty()) {
      std::ofstream f{c.json};
      f << r.to_json() << '\n';
      if (!f) return fail(program, "cannot write " + c.json, false, operators);
    }
    return 0;
  } catch (const std::exception& e) {
    return fail(program, e.what(), false, operators);
  }
}

}  // namespace troupe_apps
