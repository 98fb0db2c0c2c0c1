// The CAF 0.17 counterparts of the streaming applications (bench/apps/caf.cpp)
// compute what the applications compute: both implementations replay their
// benchmark input over whole passes and must agree on every result (wc's
// final counts, fd's outliers, sd's spikes, lr's tolls). The applications
// themselves are checked against independent sequential references in
// apps_test.cpp. Built only where CAF 0.17 is installed, and not under the
// sanitizers (Debian's CAF is not built for them).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "apps/impls.hpp"

namespace {

using bench::apps::app;

struct caf_case {
  const char* name;
  app id;
  std::int64_t replicas;
  std::int64_t passes;
};

class caf_apps : public ::testing::TestWithParam<caf_case> {};

TEST_P(caf_apps, compute_what_the_troupe_applications_compute) {
  const auto& c = GetParam();
  bench::params p{{"app", static_cast<std::int64_t>(c.id)},
                  {"rate", 0},
                  {"replicas", c.replicas},
                  {"seconds", 0},
                  {"workers", 2},
                  {"passes", c.passes}};
  const auto t = bench::apps::troupe_outcome(p);
  const auto k = bench::apps::caf_outcome(p);
  EXPECT_EQ(t.source_tuples, k.source_tuples);
  EXPECT_EQ(t.sink_tuples, k.sink_tuples);
  const auto& a = t.computed;
  const auto& b = k.computed;
  switch (c.id) {
    case app::wc:
      ASSERT_FALSE(a.word_counts.empty());
      EXPECT_EQ(t.words, k.words);
      EXPECT_TRUE(a.word_counts == b.word_counts) << a.word_counts.size() << " words vs " << b.word_counts.size();
      break;
    case app::fd:
      ASSERT_FALSE(a.outliers.empty());
      EXPECT_EQ(a.outliers.size(), t.sink_tuples / static_cast<std::uint64_t>(c.passes));
      EXPECT_TRUE(a.outliers == b.outliers) << a.outliers.size() << " outliers vs " << b.outliers.size();
      break;
    case app::sd:
      ASSERT_FALSE(a.spikes.empty());
      EXPECT_TRUE(a.spikes == b.spikes) << a.spikes.size() << " spikes vs " << b.spikes.size();
      break;
    case app::lr:
      ASSERT_FALSE(a.tolls.empty());
      EXPECT_EQ(t.tolls_assessed, k.tolls_assessed);
      EXPECT_EQ(t.tolls_charged, k.tolls_charged);
      EXPECT_GT(t.tolls_charged, 0u);
      EXPECT_TRUE(a.tolls == b.tolls) << a.tolls.size() << " tolls vs " << b.tolls.size();
      break;
  }
}

// One replica per operator for all four; and wc with two replicas of every
// operator (keyed routing across replicas), whose counts do not depend on how
// the two sources interleave. The others' results do: with two sources each
// replaying the input, a customer's, device's or vehicle's history is the two
// replays interleaved in whatever order the run gives (lr: a vehicle seen
// back and forth between two segments crosses more often).
INSTANTIATE_TEST_SUITE_P(apps, caf_apps,
                         ::testing::Values(caf_case{"wc", app::wc, 1, 3}, caf_case{"wc_x2", app::wc, 2, 2},
                                           caf_case{"fd", app::fd, 1, 1}, caf_case{"sd", app::sd, 1, 1},
                                           caf_case{"lr", app::lr, 1, 1}),
                         [](const auto& info) { return std::string{info.param.name}; });

}  // namespace
