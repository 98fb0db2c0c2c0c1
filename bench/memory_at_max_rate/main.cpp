#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "memory_at_max_rate";
  s.description = "fast source -> slow sink (~1 us per tuple) for N seconds: memory, sink tuples/s";
  s.impls = {{"troupe", bench::run_troupe}, {"caf", bench::run_caf}};
  // The tuple count is not a parameter (the source runs for a time): the
  // implementations report it as the extra figure sink_tuples.
  s.primary = bench::metric{"sink_tuples_per_s", "tuples/s", true, [](const bench::sample& r, const bench::params&) {
                              auto it = r.extra.find("sink_tuples");
                              return it == r.extra.end() || r.wall_s <= 0 ? 0.0 : it->second.value / r.wall_s;
                            }};
  s.variants = [](bool full) {
    return std::vector<bench::variant>{
        {"1 us per tuple, 2 workers",
         {{"seconds", full ? 20 : 6}, {"workers", 2}, {"sink_spin", 600}, {"rss_cap_mib", 1536}}}};
  };
  s.default_runs = 3;
  return bench::run_main(argc, argv, s);
}
