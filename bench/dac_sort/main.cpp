#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "dac_sort";
  s.description = "divide & conquer merge sort of 10M ints vs std::sort and tbb::parallel_sort";
  s.impls = {{"troupe", bench::run_troupe},
             {"troupe_seq_merge", bench::run_troupe_seq_merge},
             {"std_sort", bench::run_std_sort},
             {"tbb", bench::run_tbb},
             {"caf", bench::run_caf}};
  s.primary = bench::wall_time_metric();
  // The cut-off gives each worker four leaves, n / (4 x workers): enough
  // pieces to balance the load, few merge levels above them. troupe against
  // tbb on 2 workers, by cut-off (5 runs each): 65'536 (eight levels)
  // 0.95-0.96x, 262'144 0.95x, 625'000 0.99x, 1'250'000 1.00-1.04x,
  // 2'500'000 1.03x. caf takes the same cut-off (one actor per division).
  s.variants = [](bool) {
    constexpr std::int64_t n = 10'000'000, workers = 2;
    return std::vector<bench::variant>{
        {"10M ints, 2 workers", {{"n", n}, {"cutoff", n / (4 * workers)}, {"workers", workers}}}};
  };
  return bench::run_main(argc, argv, s);
}
