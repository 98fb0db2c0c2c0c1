#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "pipeline3";
  s.description = "Source -> Forwarder -> Sink, 24-byte tuples at full speed, tuples/s";
  s.impls = {{"troupe", bench::run_troupe},
             {"troupe_threads", bench::run_troupe_threads},
             {"troupe_chain", bench::run_troupe_chain},
             {"troupe_fused", bench::run_troupe_fused},
             {"troupe_actors", bench::run_troupe_actors},
             {"caf", bench::run_caf},
             {"caf_credit", bench::run_caf_credit},
             {"caf_stream", bench::run_caf_stream},
             {"threads", bench::run_threads}};
  auto tuples = [](const bench::params& p) { return static_cast<double>(p.get("tuples")); };
  s.primary = bench::rate_metric("tuples_per_s", "tuples/s", tuples);
  s.variants = [](bool full) {
    return std::vector<bench::variant>{
        {"3 stages, 2 workers", {{"tuples", full ? 20'000'000 : 5'000'000}, {"workers", 2}}},
        {"1 worker, 3 stages", {{"tuples", full ? 20'000'000 : 5'000'000}, {"workers", 1}}}};
  };
  s.default_runs = 3;
  s.instructions = bench::instruction_counting{
      [] { return std::vector<bench::variant>{{"1 worker", {{"tuples", 500'000}, {"workers", 1}}}}; }, "tuple", tuples};
  return bench::run_main(argc, argv, s);
}
