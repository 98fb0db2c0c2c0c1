#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "window_count";
  s.description = "keyed tumbling event-time window count (10 s, 50k Zipf keys), top 10 per window, elements/s";
  s.impls = {{"troupe", bench::run_troupe}, {"sequential", bench::run_sequential}};
  auto elements = [](const bench::params& p) { return static_cast<double>(p.get("elements")); };
  s.primary = bench::rate_metric("elements_per_s", "elements/s", elements);
  s.variants = [](bool full) {
    const std::int64_t n = full ? 8'000'000 : 2'000'000;
    return std::vector<bench::variant>{{"2 workers", {{"elements", n}, {"keys", 50'000}, {"workers", 2}}},
                                       {"1 worker", {{"elements", n}, {"keys", 50'000}, {"workers", 1}}}};
  };
  s.default_runs = 5;
  s.instructions = bench::instruction_counting{
      [] {
        return std::vector<bench::variant>{{"1 worker", {{"elements", 500'000}, {"keys", 50'000}, {"workers", 1}}}};
      },
      "element", elements};
  return bench::run_main(argc, argv, s);
}
