// farm_pipeline: Source -> farm(4, round robin) -> farm(4, by key) -> Sink.
// Each farm worker does a little synthetic work per tuple (common/
// synthetic.hpp, `spin` iterations, ~80 ns at 1.6 ns each), so the farms
// matter; the second farm routes by the tuple's key (value mod 1024), so the
// same key always reaches the same replica.
//
// params:
//   tuples    tuples the source emits (quick 2'000'000, full 10'000'000)
//   workers   scheduler threads of the actor implementations (2)
//   replicas  replicas of each farm (4)
//   spin      synthetic work per tuple in each farm worker (50 iterations)
//   farms     2 (default), or 1: Source -> farm(replicas) -> Sink, troupe
//             only (the others skip it as not available)
// impls:
//   troupe         troupe's typed streaming layer with router elimination:
//                  pipeline{src, farm{w1, 4}, farm{w2, 4, by_key}, sink}; every
//                  first-farm replica routes straight into the second farm's
//                  replicas (4 x 4 channels of 1024 slots), pool of 2 workers
//   troupe_router  the same with an explicit single-replica identity node
//                  between the farms (FastFlow's collector + emitter in one
//                  node): every tuple takes one more hop through one node
//   caf            CAF 0.17 event-based actors: a source, 4 round-robin worker
//                  actors, 4 worker actors chosen by key, a sink; the source
//                  keeps at most `credit` tuples in flight (the sink
//                  acknowledges every `ack` tuples), so mailboxes stay bounded
// Measured region: from the start signal until the sink has every tuple.
// Figure: tuples_per_s.
// Check: the sink counts `tuples` tuples whose values sum to
// tuples*(tuples-1)/2 and whose work result equals the reference for their
// key (both farms did their work on every tuple); troupe impls also check
// that each key reached exactly one replica of the second farm (each replica
// records its keys; the records are merged after the graph has finished).
#pragma once

#include <bitset>
#include <cstdint>
#include <mutex>
#include <vector>

#include "common/harness.hpp"
#include "common/synthetic.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_troupe_router(const params& p);
sample run_caf(const params& p);

namespace farm_pipeline {

/// Distinct keys: tuple i has key i mod keys.
inline constexpr std::int64_t keys = 1024;

struct tuple {
  std::int64_t key;
  std::int64_t value;
  double work;  // the farms' synthetic work, applied once in each farm
};
static_assert(sizeof(tuple) == 24);

inline tuple make_tuple(std::int64_t i) {
  const auto key = i % keys;
  return tuple{key, i, 1.0 + static_cast<double>(key) * 1e-3};
}

/// One farm worker's work on a tuple.
inline void work(tuple& t, std::int64_t spin) { t.work = synthetic_work(t.work, spin); }

/// The sink's bookkeeping, shared by every implementation.
struct tally {
  std::vector<double> expected;  // the work result per key after every farm
  std::int64_t count = 0;
  std::int64_t sum = 0;
  std::int64_t wrong_work = 0;

  explicit tally(std::int64_t spin, std::int64_t farms = 2) {
    for (std::int64_t k = 0; k < keys; ++k) {
      tuple t = make_tuple(k);
      for (std::int64_t f = 0; f < farms; ++f) work(t, spin);
      expected.push_back(t.work);
    }
  }
  void add(const tuple& t) {
    if (t.key < 0 || t.key >= keys || t.work != expected[static_cast<std::size_t>(t.key)]) ++wrong_work;
    ++count;
    sum += t.value;
  }
  void check(std::int64_t tuples) const {
    check_eq("tuples at the sink", tuples, count);
    check_eq("sum of values", tuples * (tuples - 1) / 2, sum);
    check_eq("tuples with a wrong work result", 0, wrong_work);
  }
};

/// The keys each replica of the keyed farm saw (troupe impls).
struct key_log {
  std::mutex mtx;
  std::vector<std::bitset<keys>> replicas;

  void add(const std::bitset<keys>& seen) {
    std::lock_guard<std::mutex> guard{mtx};
    replicas.push_back(seen);
  }
  /// Every key that the tuples carry reached exactly one replica.
  void check(std::int64_t tuples, std::int64_t expected_replicas) {
    std::lock_guard<std::mutex> guard{mtx};
    check_eq("keyed farm replicas that reported", expected_replicas, static_cast<std::int64_t>(replicas.size()));
    const std::int64_t distinct = tuples < keys ? tuples : keys;
    std::int64_t seen = 0, on_several = 0;
    for (std::int64_t k = 0; k < keys; ++k) {
      int n = 0;
      for (auto& r : replicas) n += r.test(static_cast<std::size_t>(k)) ? 1 : 0;
      if (n > 0) ++seen;
      if (n > 1) ++on_several;
    }
    check_eq("keys seen by the keyed farm", distinct, seen);
    check_eq("keys seen by more than one replica", 0, on_several);
  }
};

}  // namespace farm_pipeline
}  // namespace bench
