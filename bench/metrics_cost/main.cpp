// bench_metrics_cost: the cost of troupe::metrics on pipeline3 and on wc at
// full speed (see impls.hpp).
#include "impls.hpp"

#include <vector>

namespace mc = bench::metrics_cost;

namespace {

bench::params pipeline3(std::int64_t tuples, std::int64_t graphs, std::int64_t workers) {
  return bench::params{{"tuples", tuples}, {"graphs", graphs}, {"workers", workers}, {"scrape_ms", 1000}};
}

bench::params wc(std::int64_t seconds, std::int64_t workers) {
  // bench_apps_max_rate's wc variant (app 0, full speed, one replica each).
  return bench::params{{"app", 0},           {"rate", 0},          {"replicas", 1},
                       {"seconds", seconds}, {"workers", workers}, {"scrape_ms", 1000}};
}

}  // namespace

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "metrics_cost";
  s.description = "pipeline3 and wc at full speed: no exporter / exporter watching / scraped every second, tuples/s";
  s.impls = {{"troupe", [](const bench::params& p) { return mc::run(p, mc::mode::plain); }},
             {"troupe_metrics", [](const bench::params& p) { return mc::run(p, mc::mode::watched); }},
             {"troupe_scraped", [](const bench::params& p) { return mc::run(p, mc::mode::scraped); }}};
  // Both workloads report sink_tuples_per_s (wc runs for a time, so the
  // tuple count is not a parameter).
  s.primary = bench::extra_metric("tuples_per_s", "tuples/s", true, "sink_tuples_per_s");
  s.variants = [](bool full) {
    const std::int64_t tuples = full ? 20'000'000 : 5'000'000;  // pipeline3's
    const std::int64_t graphs = full ? 40 : 120;
    return std::vector<bench::variant>{{"pipeline3 2 workers", pipeline3(tuples, graphs, 2)},
                                       {"pipeline3 1 worker", pipeline3(tuples, graphs, 1)},
                                       {"wc", wc(full ? 10 : 5, 2)}};
  };
  s.default_runs = 5;
  s.full_runs = 5;
  // Instructions (one worker): pipeline3 with a scrape forced every 100k
  // tuples (once per graph, 5 graphs), and 20 passes over wc's input with a
  // scrape every 200 ms of valgrind's (slow) time. (troupe_scraped -
  // troupe_metrics) / scrapes (each troupe_scraped run prints its count) is
  // what one scrape costs; troupe_metrics - troupe what watching costs.
  s.instructions = bench::instruction_counting{
      [] {
        return std::vector<bench::variant>{
            {"pipeline3 1 worker, scrape every 100k tuples", pipeline3(100'000, 5, 1).set("forced", 1)},
            {"wc 20 passes, 1 worker, scrape every 200 ms", wc(0, 1).set("passes", 20).set("scrape_ms", 200)}};
      },
      "tuple", nullptr, "source_tuples"};
  return bench::run_main(argc, argv, s);
}
