#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "map_rows";
  s.description = "rows of 5000 elements (~2 us each) mapped then reduced by an actor; speedup of the map accelerator";
  s.impls = {{"troupe", bench::run_troupe}, {"troupe_seq", bench::run_troupe_seq}, {"caf", bench::run_caf}};
  s.primary = bench::wall_time_metric();
  s.variants = [](bool full) {
    std::vector<bench::variant> vs;
    for (std::int64_t w : {1, 2})
      vs.push_back({std::to_string(w) + (w == 1 ? " map worker" : " map workers"),
                    {{"rows", full ? 100 : 50}, {"cols", 5000}, {"spin", 1500}, {"map_workers", w}}});
    return vs;
  };
  s.default_runs = 3;
  return bench::run_main(argc, argv, s);
}
