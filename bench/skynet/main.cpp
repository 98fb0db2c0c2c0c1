#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "skynet";
  s.description = "10-ary actor tree down to 1M leaves, sum of ordinals; wall time incl. teardown";
  s.impls = {{"troupe", bench::run_troupe}, {"caf", bench::run_caf}};
  s.primary = bench::wall_time_metric();
  s.variants = [](bool) {
    std::vector<bench::variant> vs;
    for (std::int64_t w : {1, 2})
      vs.push_back({std::to_string(w) + (w == 1 ? " worker" : " workers"),
                    {{"leaves", 1'000'000}, {"arity", 10}, {"workers", w}}});
    return vs;
  };
  // Every actor of the tree: leaves + leaves / arity + ... + 1.
  auto actors = [](const bench::params& p) {
    double n = 0;
    for (std::int64_t level = p.get("leaves"); level >= 1; level /= p.get("arity")) n += static_cast<double>(level);
    return n;
  };
  s.instructions = bench::instruction_counting{
      [] { return std::vector<bench::variant>{{"1 worker", {{"leaves", 100'000}, {"arity", 10}, {"workers", 1}}}}; },
      "actor", actors};
  return bench::run_main(argc, argv, s);
}
