// metrics.hpp: what a stream graph counts while it runs.
//   auto m = graph.metrics();            // a snapshot, any time, any thread
//   m.nodes[i].items_in / items_out / queued
//   m.latency.percentile(0.95)           // ns, source stamp to sink
//   m.to_json()
// Items in and out are published once per batch (the counters lag by at most
// one batch while a node runs), and a node's items out also before each
// group of its outputs becomes visible downstream: one metrics() call is a
// consistent cut, in which no stage shows more items in than the stages
// feeding it show out (sums over replicas; docs/observability.md says it
// exactly). Latency is recorded by sinks whose element
// type has a `stamp` member (nanoseconds of stream::now(), set by the
// source); one element in `latency_sample` is measured (options).
// Cost: per node, two private counters; per measured element one clock read
// and one histogram increment (single writer, no read-modify-write).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <string>
#include <vector>

namespace troupe::stream {

/// Nanoseconds on the steady clock: what sources put in a `stamp` member.
inline std::uint64_t now() noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

/// Element types whose latency sinks measure.
template <class T>
concept stamped = requires(const T& t) {
  { t.stamp } -> std::convertible_to<std::uint64_t>;
};

/// A log-linear histogram of nanosecond values: 16 sub-buckets per power of
/// two (relative error under 6.25%). One thread records; any thread reads.
class latency_histogram {
 public:
  static constexpr int sub_bits = 4;
  static constexpr int buckets = (64 - sub_bits + 1) << sub_bits;

  latency_histogram() = default;
  latency_histogram(const latency_histogram& other) noexcept { merge(other); }
  latency_histogram& operator=(const latency_histogram& other) noexcept {
    for (int i = 0; i < buckets; ++i)
      counts_[i].store(other.counts_[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }

  void record(std::uint64_t ns) noexcept {
    auto& c = counts_[index(ns)];
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  /// Adds another histogram's counts (for merging the sinks of a graph).
  void merge(const latency_histogram& other) noexcept;
  std::uint64_t count() const noexcept;
  /// The value at quantile q in [0, 1] (a bucket's lower bound); 0 when empty.
  std::uint64_t percentile(double q) const noexcept;
  /// The sum of the recorded values, each taken as the middle of its
  /// bucket (within 1/32 of the true sum; exact below 16).
  double approximate_sum() const noexcept;
  std::uint64_t min() const noexcept { return percentile(0.0); }
  std::uint64_t max() const noexcept { return percentile(1.0); }

  static int index(std::uint64_t v) noexcept {
    if (v < (std::uint64_t{1} << sub_bits)) return static_cast<int>(v);
    const int msb = 63 - __builtin_clzll(v);
    const int shift = msb - sub_bits;
    return ((shift + 1) << sub_bits) + static_cast<int>((v >> shift) & ((1u << sub_bits) - 1));
  }
  static std::uint64_t lower_bound(int i) noexcept {
    const int group = i >> sub_bits;
    const std::uint64_t sub = static_cast<std::uint64_t>(i & ((1 << sub_bits) - 1));
    if (group == 0) return sub;
    return ((std::uint64_t{1} << sub_bits) + sub) << (group - 1);
  }

 private:
  std::array<std::atomic<std::uint64_t>, buckets> counts_{};
};

/// One replica of one node.
struct node_metrics {
  std::string name;         ///< the node's type (or its lambda form: map, filter, ...)
  std::size_t replica = 0;  ///< index among the replicas of the same stage
  std::size_t rank = 0;     ///< the process that runs it (a graph split across processes)
  bool dedicated = false;   ///< runs on its own thread
  std::uint64_t items_in = 0;
  std::uint64_t items_out = 0;
  std::uint64_t failed = 0;      ///< elements dropped under failure::skip
  std::size_t queued = 0;        ///< elements waiting in its input channels now
  std::size_t capacity = 0;      ///< room of its input channels together (0: a source)
  std::size_t stage = 0;         ///< which stage of the graph, front to back (replicas share it)
  std::uint64_t blocked_ns = 0;  ///< time spent waiting for room in a full output channel
  std::uint64_t late = 0;        ///< late elements dropped (time windows)
};

struct graph_metrics {
  std::vector<node_metrics> nodes;
  bool split = false;         ///< this process's part of a graph split across processes
  std::size_t rank = 0;       ///< split: this process's rank
  latency_histogram latency;  ///< every sink's measurements together
  double elapsed_s = 0;       ///< since the graph started
  /// {"elapsed_s":..,"split":..,"rank":..,"nodes":[..],"latency_ns":{"count":..,"min":..,"p5":..,...,"max":..}}
  /// (each node: name, replica, rank, stage, dedicated, items_in, items_out, failed,
  /// queued, capacity, blocked_s, late)
  std::string to_json() const;
};

}  // namespace troupe::stream
