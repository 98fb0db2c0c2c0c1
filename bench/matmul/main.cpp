#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "matmul";
  s.description = "C = A * B, N x N floats: one thread, troupe actors / map, one OpenCL kernel actor, bare OpenCL, CAF";
  s.impls = {{"seq", bench::run_seq},
             {"troupe_actors", bench::run_troupe_actors},
             {"troupe_map", bench::run_troupe_map},
             {"troupe_opencl", bench::run_troupe_opencl},
             {"opencl_bare", bench::run_opencl_bare},
             {"caf", bench::run_caf}};
  s.primary = bench::wall_time_metric();
  s.variants = [](bool full) {
    const std::int64_t n = full ? 1000 : 256;
    return std::vector<bench::variant>{{"N=" + std::to_string(n), {{"n", n}, {"workers", 2}, {"blocks", 8}}}};
  };
  s.default_runs = 3;
  return bench::run_main(argc, argv, s);
}
