#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "mixed_case";
  s.description = "20 rings x 50 actors, 1000 token hops, 5 re-creations, one factorisation per round";
  s.impls = {{"troupe", bench::run_troupe}, {"caf", bench::run_caf}};
  s.primary = bench::wall_time_metric();
  s.variants = [](bool full) {
    bench::params p{{"rings", 20}, {"ring_size", 50}, {"hops", 1'000}, {"rounds", 5}, {"workers", 2}};
    if (full) {
      p.set("semiprime", 1'152'921'470'247'108'503LL);
      p.set("factor_p", 1'073'741'789LL);
      p.set("factor_q", 1'073'741'827LL);
    } else {
      p.set("semiprime", 72'057'579'542'413'141LL);
      p.set("factor_p", 268'435'399LL);
      p.set("factor_q", 268'435'459LL);
    }
    return std::vector<bench::variant>{{full ? "60-bit semiprime, 2 workers" : "56-bit semiprime, 2 workers", p}};
  };
  return bench::run_main(argc, argv, s);
}
