// dac_sort peers: std::sort on one thread; tbb::parallel_sort on `workers` threads.
#include "impls.hpp"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_sort.h>

#include <algorithm>

bench::sample bench::run_std_sort(const params& p) {
  auto v = dac_sort::input(p.get("n"));
  const auto before = dac_sort::fingerprint_of(v);
  stopwatch sw;
  std::sort(v.begin(), v.end());
  sample s;
  s.wall_s = sw.seconds();
  dac_sort::check_sorted(v, before);
  return s;
}

bench::sample bench::run_tbb(const params& p) {
  auto v = dac_sort::input(p.get("n"));
  const auto before = dac_sort::fingerprint_of(v);
  tbb::global_control limit{tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(p.get("workers"))};
  stopwatch sw;
  tbb::parallel_sort(v.begin(), v.end());
  sample s;
  s.wall_s = sw.seconds();
  dac_sort::check_sorted(v, before);
  return s;
}
