// bench_apps_rate_sweep: every app with one replica per operator, the source
// paced at each offered rate of app_table, then at full speed: sink tuples/s
// against offered rate (see impls.hpp).
#include "impls.hpp"

#include <string>

namespace {

/// "10k/s", "2M/s".
std::string rate_label(std::int64_t r) {
  if (r >= 1'000'000 && r % 1'000'000 == 0) return std::to_string(r / 1'000'000) + "M/s";
  if (r >= 1'000 && r % 1'000 == 0) return std::to_string(r / 1'000) + "k/s";
  return std::to_string(r) + "/s";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bench::apps;
  return bench::run_main(
      argc, argv,
      apps_spec("apps_rate_sweep",
                "wc, fd, sd, lr, one replica per operator, source paced at offered rates (and full speed): "
                "sink tuples/s",
                [](const app_info& a, bool full) {
                  const std::int64_t seconds = full ? 10 : 3;
                  std::vector<bench::variant> v;
                  for (auto r : full ? a.full_rates : a.quick_rates)
                    v.push_back({std::string{a.name} + ' ' + rate_label(r), variant_params(a, r, 1, seconds, 2)});
                  v.push_back({std::string{a.name} + " full", variant_params(a, 0, 1, seconds, 2)});
                  return v;
                }));
}
