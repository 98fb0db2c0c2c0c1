// bench_apps_max_rate: every app with one replica per operator, the source at
// full speed (see impls.hpp).
#include "impls.hpp"

int main(int argc, char** argv) {
  using namespace bench::apps;
  auto s = apps_spec("apps_max_rate",
                     "wc, fd, sd, lr, one replica per operator, source at full speed with backpressure: sink tuples/s",
                     [](const app_info& a, bool full) {
                       return std::vector<bench::variant>{{a.name, variant_params(a, 0, 1, full ? 10 : 5, 2)}};
                     });
  // Instructions: one pass over the input on one worker, per source tuple,
  // over each implementation's timed run (input generation and loading are
  // outside it).
  s.instructions = bench::instruction_counting{
      [] {
        std::vector<bench::variant> vs;
        for (auto& a : app_table())
          vs.push_back({std::string{a.name} + ", 1 pass, 1 worker", variant_params(a, 0, 1, 0, 1).set("passes", 1)});
        return vs;
      },
      "tuple", nullptr, "source_tuples"};
  return bench::run_main(argc, argv, s);
}
