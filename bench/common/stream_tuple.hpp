// stream_tuple.hpp: the 24-byte tuple of the streaming pipelines (pipeline3,
// pipeline9; AGERE 2020 paper, Fig. 4 set-up) and the sink's bookkeeping that
// every implementation shares. stream_nodes.hpp has troupe's nodes for it.
#pragma once

#include <cstdint>
#include <tuple>

#include "common/harness.hpp"

namespace bench::stream_tuple {

struct tuple {
  std::int64_t key;
  std::int64_t value;
  std::int64_t stamp;
  // Crosses processes field by field; with no padding, a batch of them is
  // still one copy (troupe::net's packed types, codec.hpp).
  auto fields() { return std::tie(key, value, stamp); }
};
static_assert(sizeof(tuple) == 24);

/// Counts, sums and order of what reached the sink.
struct tally {
  std::int64_t count = 0;
  std::int64_t sum = 0;
  std::int64_t out_of_order = 0;
  void add(const tuple& t) {
    if (t.value != count) ++out_of_order;
    ++count;
    sum += t.value;
  }
  /// The source emitted values 0 .. tuples-1 in order.
  void check(std::int64_t tuples) const {
    check_eq("tuples at the sink", tuples, count);
    check_eq("sum of values", tuples * (tuples - 1) / 2, sum);
    check_eq("tuples out of order", 0, out_of_order);
  }
};

}  // namespace bench::stream_tuple
