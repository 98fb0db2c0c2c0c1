// memory_at_max_rate: a fast source into a slow sink. The source emits 24-byte
// tuples as fast as it can for `seconds`; the sink spends about 1 us of busy
// work on each (common/synthetic.hpp, `sink_spin` iterations; not a sleep).
// With flow control memory stays flat; without it the sink's queue grows for
// as long as the source runs.
//
// params:
//   seconds      how long the source emits (quick 6, full 20; more than 5)
//   workers      scheduler threads (2)
//   sink_spin    synthetic work per tuple in the sink (600 iterations, ~1 us)
//   rss_cap_mib  caf only: the source stops early when the process's RSS
//                reaches this (1536), to keep the machine safe
// impls:
//   troupe   troupe's typed streaming layer: source -> sink, a channel of 1024
//            slots, both nodes on the pool of 2 workers (backpressure)
//   caf      CAF 0.17 event-based actors: the source sends chunks of 1000 and
//            re-triggers itself, no flow control (the sink's mailbox grows
//            without bound); it reads its RSS after every chunk and stops at
//            `rss_cap_mib` (reported as capped = 1, with when and how much it
//            had sent)
// Measured region: the whole run, from the start until the sink has every
// tuple the source sent (the backlog included).
// Figure: sink_tuples_per_s = tuples the sink handled / wall_s. The point of
// the benchmark is memory: peak RSS (from the harness), and extra figures
// rss_at_5s_mib and rss_at_end_mib (the process's RSS from /proc/self/statm,
// sampled by a thread 5 s after the start and at the end of the source's
// `seconds`, or when the run ends if that comes first) and rss_growth =
// rss_at_end_mib / rss_at_5s_mib. A capped caf run stopped growing at the
// cap, so its rss_growth understates the growth of an uncapped run.
// Further extras: sink_tuples, source_s (seconds the source emitted for),
// capped (caf: 1 when the RSS cap stopped the source).
// Check: the sink's count equals the source's count (no loss), and the
// values (0, 1, 2, ...) sum to count*(count-1)/2.
#pragma once

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "common/harness.hpp"
#include "common/synthetic.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_caf(const params& p);

namespace memory_at_max_rate {

struct tuple {
  std::int64_t key;
  std::int64_t value;
  std::int64_t stamp;
};
static_assert(sizeof(tuple) == 24);

/// This process's resident set size in MiB (/proc/self/statm), 0 if unknown.
inline double rss_mib() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int got = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (got != 2) return 0;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

/// Samples rss_mib() 5 s after construction and `seconds` after it (each
/// earlier if stop() comes first), on its own thread.
class rss_sampler {
 public:
  explicit rss_sampler(double seconds)
      : t0_{std::chrono::steady_clock::now()}, th_{[this, seconds] { run(seconds); }} {}
  rss_sampler(const rss_sampler&) = delete;
  rss_sampler& operator=(const rss_sampler&) = delete;
  ~rss_sampler() { stop(); }

  /// Takes the samples still due now and ends the thread.
  void stop() {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      stop_ = true;
    }
    cv_.notify_all();
    if (th_.joinable()) th_.join();
  }
  /// After stop().
  void report(sample& s) const {
    s.add("rss_at_5s_mib", at_5s_, "MiB");
    s.add("rss_at_end_mib", at_end_, "MiB");
    s.add("rss_growth", at_5s_ > 0 ? at_end_ / at_5s_ : 0, "x");
  }

 private:
  void run(double seconds) {
    auto at = [this](double s) {
      return t0_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
    };
    std::unique_lock<std::mutex> lock{mtx_};
    cv_.wait_until(lock, at(5.0), [this] { return stop_; });
    at_5s_ = rss_mib();
    cv_.wait_until(lock, at(seconds), [this] { return stop_; });
    at_end_ = rss_mib();
  }

  std::chrono::steady_clock::time_point t0_;
  std::mutex mtx_;
  std::condition_variable cv_;
  bool stop_ = false;
  double at_5s_ = 0, at_end_ = 0;
  std::thread th_;  // last: starts after the members it uses
};

/// The sink's bookkeeping, shared by both implementations.
struct tally {
  std::int64_t count = 0;
  std::int64_t sum = 0;
  double work = 0;  // the synthetic work's results, so it cannot be optimised away
  void add(const tuple& t, std::int64_t spin) {
    work += synthetic_work(static_cast<double>(t.key), spin);
    ++count;
    sum += t.value;
  }
  void check(std::int64_t sent) const {
    bench::check(sent > 0, "the source sent nothing");
    check_eq("tuples at the sink (sent by the source)", sent, count);
    check_eq("sum of values", sent * (sent - 1) / 2, sum);
    bench::check(std::isfinite(work), "the sink's work result is not finite");
  }
};

}  // namespace memory_at_max_rate
}  // namespace bench
