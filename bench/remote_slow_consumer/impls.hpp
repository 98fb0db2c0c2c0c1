// remote_slow_consumer: a source at full speed in one process streams the
// 24-byte tuples of common/stream_tuple.hpp to a slow sink in another process
// (loopback TCP) for `seconds`; what matters is the memory of both processes
// over time: flat when the sink's pace holds the source back.
//
// params:
//   seconds   how long the source emits (quick 6, full 20); then it stops
//             and the stream drains (what is in flight reaches the sink)
//   slow_ns   busy work per tuple at the sink (1000 ns: the sink takes at
//             most ~1 M tuples/s, far below what the source could emit)
// Each implementation forks its server process first (common/peer_process.hpp);
// the server listens on an ephemeral port of 127.0.0.1 and reports it through
// the pipe; a handshake (outside the measured region) connects the client.
// Sampling: a sampler thread in EACH process reads its resident set (VmRSS
// of /proc/self/status) at 1 s intervals: the client's from the start of the
// stream (sample k at start + k s), the server's from the first tuple at its
// sink (a few ms later); plus one sample at the end of each side's stream
// (client: everything it sent was acknowledged; server: its sink has ended),
// before anything is torn down. The server sends its samples back with its
// count at the end (troupe: in the answer of its published control actor;
// zmq: in its acknowledgement).
// Measured region: from the start of the stream until the client has the
// server's answer (seconds plus the drain). The troupe impl cancels its part
// of the graph 10 s before the run's time limit (a stuck channel fails).
// Figures: rss_growth = the larger of rss_client_ratio and rss_server_ratio
// (the primary figure, computed from those two; lower is better; target
// <= 1.10, flat), where
// rss_<side>_ratio = rss_<side>_mib_at_end / rss_<side>_mib_at_5s; the four
// samples rss_client_mib_at_5s, rss_client_mib_at_end, rss_server_mib_at_5s,
// rss_server_mib_at_end; tuples (delivered) and tuples_per_s (delivered per
// wall second); the series rss_client_mib_sNN and rss_server_mib_sNN (sample
// NN, every second), which each run also prints on stderr.
// Check: the sink got every tuple the source emitted (exact count), with the
// values' sum and in order.
// Impls:
//   troupe  troupe::net::split of pipeline{source, sink}, placement "0;1",
//           plaintext, channel sizes at their defaults (batch 1024, window
//           65536: the credit holds the source back); 1 worker per process
//   zmq     raw ZeroMQ PUSH -> PULL, 1024 tuples per message, default
//           high-water marks (1000 messages per socket: up to ~24 MiB queued
//           on each side, plus the kernel's socket buffers) as the only
//           backpressure, so its drain at the end takes up to ~2 s
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/harness.hpp"
#include "common/stream_tuple.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_zmq(const params& p);

namespace remote_slow_consumer {

using stream_tuple::tally;
using stream_tuple::tuple;
using clock = std::chrono::steady_clock;

/// Tuples per ZeroMQ message in the zmq impl (the channels' default batch).
constexpr std::size_t batch = 1024;
/// The sample the "at_5s" figures take (needs seconds >= 6).
constexpr std::size_t early_sample = 5;

/// The run's time limit: three times the duration plus 60 s; main.cpp sets
/// the harness timeout above it for full runs.
inline std::chrono::seconds time_limit(std::int64_t seconds) { return std::chrono::seconds{seconds * 3 + 60}; }

/// The resident set of this process now (VmRSS), in MiB; 0 if unreadable.
inline double rss_mib() {
  double kib = 0;
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::strncmp(line, "VmRSS:", 6) == 0) {
        kib = std::strtod(line + 6, nullptr);
        break;
      }
    }
    std::fclose(f);
  }
  return kib / 1024.0;
}

/// Busy work of `ns` nanoseconds (the slow sink).
inline void spin_for_ns(std::int64_t ns) {
  const auto until = clock::now() + std::chrono::nanoseconds{ns};
  while (clock::now() < until) {
  }
}

/// A thread that samples rss_mib() at t0 + k s (k = 0, 1, ...) once start()
/// gave it t0, until stop().
class rss_sampler {
 public:
  rss_sampler() : thread_{[this] { loop(); }} {}
  ~rss_sampler() { stop(); }
  rss_sampler(const rss_sampler&) = delete;
  rss_sampler& operator=(const rss_sampler&) = delete;

  /// Sets t0 (the first call wins; any thread).
  void start(clock::time_point t0) {
    {
      std::lock_guard<std::mutex> lock{mtx_};
      if (t0_) return;
      t0_ = t0;
    }
    cv_.notify_all();
  }
  /// Ends the sampling; the samples taken (MiB).
  std::vector<double> stop() {
    {
      std::lock_guard<std::mutex> lock{mtx_};
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    return samples_;
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock{mtx_};
    cv_.wait(lock, [this] { return stop_ || t0_.has_value(); });
    for (int k = 0;; ++k) {
      if (cv_.wait_until(lock, *t0_ + std::chrono::seconds{k}, [this] { return stop_; })) return;
      lock.unlock();
      const double mib = rss_mib();
      lock.lock();
      samples_.push_back(mib);
    }
  }

  std::mutex mtx_;
  std::condition_variable cv_;
  std::optional<clock::time_point> t0_;
  bool stop_ = false;
  std::vector<double> samples_;
  std::thread thread_;  // last: starts after the members it uses
};

/// One side's samples: every second and at the end.
struct series {
  std::vector<double> every_second;
  double at_end = 0;
};

/// Checks the tally against the `emitted` tuples and adds the figures.
inline void finish(sample& s, std::int64_t emitted, const tally& t, const series& client, const series& server,
                   const char* impl) {
  t.check(emitted);
  check(client.every_second.size() > early_sample && server.every_second.size() > early_sample,
        "fewer than " + std::to_string(early_sample + 1) + " samples (client " +
            std::to_string(client.every_second.size()) + ", server " + std::to_string(server.every_second.size()) +
            "): the run was too short");
  const double c5 = client.every_second[early_sample], s5 = server.every_second[early_sample];
  s.add("rss_client_mib_at_5s", c5, "MiB");
  s.add("rss_client_mib_at_end", client.at_end, "MiB");
  s.add("rss_server_mib_at_5s", s5, "MiB");
  s.add("rss_server_mib_at_end", server.at_end, "MiB");
  const double rc = c5 > 0 ? client.at_end / c5 : 0, rs = s5 > 0 ? server.at_end / s5 : 0;
  s.add("rss_client_ratio", rc, "x");
  s.add("rss_server_ratio", rs, "x");
  s.add("tuples", static_cast<double>(t.count), "tuples", true);
  s.add("tuples_per_s", s.wall_s > 0 ? static_cast<double>(t.count) / s.wall_s : 0, "tuples/s", true);
  std::string line = std::string{"[remote_slow_consumer] "} + impl + " RSS MiB per second, client:";
  auto add_series = [&](const char* side, const series& x) {
    char buf[64];
    for (std::size_t k = 0; k < x.every_second.size(); ++k) {
      std::snprintf(buf, sizeof buf, "rss_%s_mib_s%02zu", side, k);
      s.add(buf, x.every_second[k], "MiB");
      std::snprintf(buf, sizeof buf, " %.1f", x.every_second[k]);
      line += buf;
    }
    std::snprintf(buf, sizeof buf, " (end %.1f)", x.at_end);
    line += buf;
  };
  add_series("client", client);
  line += "; server:";
  add_series("server", server);
  std::fprintf(stderr, "%s; %lld tuples\n", line.c_str(), static_cast<long long>(t.count));
}

}  // namespace remote_slow_consumer
}  // namespace bench
