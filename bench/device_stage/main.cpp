#include "impls.hpp"

#include <vector>

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "device_stage";
  s.description = "source -> device_map (OpenCL) -> sink vs source -> farm(2) on the CPU -> sink, ~35 flops/element";
  s.impls = {{"troupe_opencl", bench::run_troupe_opencl}, {"troupe_cpu_farm", bench::run_troupe_cpu_farm}};
  s.primary = bench::rate_metric("tuples_per_s", "tuples/s",
                                 [](const bench::params& p) { return static_cast<double>(p.get("elements")); });
  // "batch B": 2 workers (the series in docs/performance.md); "batch B, 1
  // worker": the source, the stage and the sink share one worker (a stage
  // that blocked its worker would stall the other two meanwhile).
  s.variants = [](bool full) {
    std::vector<bench::variant> vs;
    for (std::int64_t w : {2, 1})
      for (std::int64_t b : {256, 4096})
        vs.push_back({"batch " + std::to_string(b) + (w == 1 ? ", 1 worker" : ""),
                      {{"elements", full ? 20'000'000 : 2'000'000}, {"batch", b}, {"workers", w}, {"replicas", 2}}});
    return vs;
  };
  s.default_runs = 3;
  return bench::run_main(argc, argv, s);
}
