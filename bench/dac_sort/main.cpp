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
  s.variants = [](bool) {
    return std::vector<bench::variant>{
        {"10M ints, 2 workers", {{"n", 10'000'000}, {"cutoff", 65'536}, {"workers", 2}}}};
  };
  return bench::run_main(argc, argv, s);
}
