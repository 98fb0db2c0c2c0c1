// placements.hpp: the placements every stream test runs in (pool with 1, 2
// and 4 workers, and a thread per node), a fixture that hands them out, and
// the counting source most graph tests start with.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "troupe/troupe.hpp"

namespace troupe_test {

struct placement_case {
  const char* name;
  std::size_t workers;
  troupe::placement where;
};

class placed_test : public ::testing::TestWithParam<placement_case> {
 protected:
  troupe::config cfg() const { return troupe::config{.workers = GetParam().workers}; }
  troupe::stream::options opts() const {
    troupe::stream::options o;
    o.placement = GetParam().where;
    o.capacity = 64;  // small channels: backpressure happens often
    return o;
  }
};

inline auto every_placement() {
  return ::testing::Values(placement_case{"pool_1_worker", 1, troupe::placement::pool()},
                           placement_case{"pool_2_workers", 2, troupe::placement::pool()},
                           placement_case{"pool_4_workers", 4, troupe::placement::pool()},
                           placement_case{"threads", 1, troupe::placement::own_thread()});
}
inline std::string placement_name(const ::testing::TestParamInfo<placement_case>& info) { return info.param.name; }

/// Emits 0 .. n-1.
inline auto counting_source(std::int64_t n) {
  return troupe::stream::source([i = std::int64_t{0}, n]() mutable -> std::optional<std::int64_t> {
    if (i == n) return std::nullopt;
    return i++;
  });
}

}  // namespace troupe_test
