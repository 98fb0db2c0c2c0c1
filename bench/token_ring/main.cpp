#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "token_ring";
  s.description = "one token passed around a ring of 100 actors (sequential), hops/s and CPU per wall second";
  s.impls = {{"troupe", bench::run_troupe}, {"caf", bench::run_caf}};
  auto hops = [](const bench::params& p) { return static_cast<double>(p.get("hops")); };
  s.primary = bench::rate_metric("hops_per_s", "hops/s", hops);
  s.variants = [](bool full) {
    std::vector<bench::variant> vs;
    for (std::int64_t w : {1, 2})
      vs.push_back({std::to_string(w) + (w == 1 ? " worker" : " workers"),
                    {{"actors", 100}, {"hops", full ? 10'000'000 : 2'000'000}, {"workers", w}}});
    return vs;
  };
  s.instructions = bench::instruction_counting{
      [] { return std::vector<bench::variant>{{"1 worker", {{"actors", 100}, {"hops", 200'000}, {"workers", 1}}}}; },
      "hop", hops};
  return bench::run_main(argc, argv, s);
}
