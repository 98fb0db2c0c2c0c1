#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "pattern_request";
  s.description = "requests through a spawned pipeline{farm, stage}, items/s (p50/p99 latency as extras)";
  s.impls = {{"troupe", bench::run_troupe}, {"caf", bench::run_caf}};
  s.primary = bench::rate_metric("items_per_s", "items/s",
                                 [](const bench::params& p) { return static_cast<double>(p.get("items")); });
  s.variants = [](bool full) {
    const std::int64_t items = full ? 1'000'000 : 200'000;
    return std::vector<bench::variant>{
        {"1 worker", {{"clients", 4}, {"window", 8}, {"items", items}, {"replicas", 2}, {"spin", 0}, {"workers", 1}}},
        {"2 workers", {{"clients", 4}, {"window", 8}, {"items", items}, {"replicas", 2}, {"spin", 0}, {"workers", 2}}},
        {"2 workers, 1 us work",
         {{"clients", 4}, {"window", 8}, {"items", items / 4}, {"replicas", 2}, {"spin", 600}, {"workers", 2}}},
    };
  };
  return bench::run_main(argc, argv, s);
}
