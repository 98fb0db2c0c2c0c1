#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "apps_max_rate";
  s.description = "wc and fd, one replica per operator, source at full speed with backpressure: sink tuples/s";
  s.impls = {{"troupe", bench::run_troupe}, {"caf", bench::run_caf}};
  // The source runs for a time, so the tuple count is not a parameter: the
  // primary figure is the implementations' extra figure sink_tuples_per_s
  // (named tuples_per_s here so that the JSON has one line per metric name).
  s.primary = bench::metric{"tuples_per_s", "tuples/s", true, [](const bench::sample& r, const bench::params&) {
                              auto it = r.extra.find("sink_tuples_per_s");
                              return it == r.extra.end() ? 0.0 : it->second.value;
                            }};
  s.variants = [](bool full) {
    const std::int64_t seconds = full ? 10 : 5;
    return std::vector<bench::variant>{
        {"wc", {{"app", bench::apps_max_rate::app_wc}, {"seconds", seconds}, {"workers", 2}}},
        {"fd", {{"app", bench::apps_max_rate::app_fd}, {"seconds", seconds}, {"workers", 2}}}};
  };
  s.default_runs = 3;
  return bench::run_main(argc, argv, s);
}
