#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "kernel_round_trip";
  s.description = "one request at a time to a kernel actor adding 1024 floats vs bare OpenCL and a CPU actor, rt/s";
  s.impls = {{"troupe_opencl", bench::run_troupe_opencl},
             {"troupe_opencl_scoped", bench::run_troupe_opencl_scoped},
             {"opencl_bare", bench::run_opencl_bare},
             {"opencl_bare_callback", bench::run_opencl_bare_callback},
             {"troupe_cpu_actor", bench::run_troupe_cpu_actor}};
  s.primary = bench::rate_metric("round_trips_per_s", "rt/s",
                                 [](const bench::params& p) { return static_cast<double>(p.get("round_trips")); });
  s.variants = [](bool full) {
    const std::int64_t round_trips = full ? 100'000 : 10'000;
    auto v = [round_trips](std::int64_t workers, std::int64_t relaxed) {
      return bench::params{{"round_trips", round_trips},
                           {"warmup", 200},
                           {"elements", 1024},
                           {"workers", workers},
                           {"relaxed", relaxed}};
    };
    // The last one: idle workers spin ~5 us before they sleep instead of up
    // to ~50 us (polling::relaxed); with PoCL the device's threads run on
    // the same cores as the workers.
    return std::vector<bench::variant>{{"1 worker", v(1, 0)}, {"2 workers", v(2, 0)}, {"1 worker relaxed", v(1, 1)}};
  };
  s.default_runs = 5;
  return bench::run_main(argc, argv, s);
}
