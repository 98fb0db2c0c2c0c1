// bench_apps_max_rate: every app with one replica per operator, the source at
// full speed (see impls.hpp).
#include "impls.hpp"

int main(int argc, char** argv) {
  using namespace bench::apps;
  return bench::run_main(
      argc, argv,
      apps_spec("apps_max_rate",
                "wc, fd, sd, lr, one replica per operator, source at full speed with backpressure: sink tuples/s",
                [](const app_info& a, bool full) {
                  return std::vector<bench::variant>{{a.name, variant_params(a, 0, 1, full ? 10 : 5, 2)}};
                }));
}
