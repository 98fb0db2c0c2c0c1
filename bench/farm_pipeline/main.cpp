#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "farm_pipeline";
  s.description = "Source -> farm(4) -> farm(4, by key) -> Sink, ~80 ns of work per farm (or none), tuples/s";
  s.impls = {{"troupe", bench::run_troupe}, {"troupe_router", bench::run_troupe_router}, {"caf", bench::run_caf}};
  auto tuples = [](const bench::params& p) { return static_cast<double>(p.get("tuples")); };
  s.primary = bench::rate_metric("tuples_per_s", "tuples/s", tuples);
  s.variants = [](bool full) {
    return std::vector<bench::variant>{
        {"2 farms of 4, 2 workers",
         {{"tuples", full ? 10'000'000 : 2'000'000}, {"workers", 2}, {"replicas", 4}, {"spin", 50}}},
        // Forwarding only: the hop through the router is then
        // most of the work.
        {"no work, 2 farms of 4",
         {{"tuples", full ? 20'000'000 : 5'000'000}, {"workers", 2}, {"replicas", 4}, {"spin", 0}}},
        // One farm of 2 between source and sink: as many replicas as
        // workers, so where the nodes land decides the rate.
        {"source, farm(2), sink",
         {{"tuples", full ? 20'000'000 : 5'000'000}, {"workers", 2}, {"replicas", 2}, {"spin", 0}, {"farms", 1}}}};
  };
  s.default_runs = 3;
  s.instructions = bench::instruction_counting{
      [] {
        return std::vector<bench::variant>{
            {"no work, 2 farms of 4, 1 worker", {{"tuples", 200'000}, {"workers", 1}, {"replicas", 4}, {"spin", 0}}}};
      },
      "tuple", tuples};
  return bench::run_main(argc, argv, s);
}
