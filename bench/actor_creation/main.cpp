#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "actor_creation";
  s.description = "fork/join: each actor spawns two children down to depth 20, result 2^20";
  s.impls = {{"troupe", bench::run_troupe}, {"caf", bench::run_caf}};
  s.primary = bench::wall_time_metric();
  s.variants = [](bool) {
    return std::vector<bench::variant>{{"depth 20, 2 workers", {{"depth", 20}, {"workers", 2}}}};
  };
  return bench::run_main(argc, argv, s);
}
