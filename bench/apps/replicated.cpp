// bench_apps_replicated: every app with every operator replicated, sources
// at full speed: 2 replicas on 2 workers, and as many as fill this machine's
// cores (see impls.hpp).
#include "impls.hpp"

#include <algorithm>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  using namespace bench::apps;
  const auto cores = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  return bench::run_main(
      argc, argv,
      apps_spec("apps_replicated",
                "wc, fd, sd, lr, every operator replicated (x2 on 2 workers; xR on all cores), full speed: "
                "sink tuples/s",
                [cores](const app_info& a, bool full) {
                  const std::int64_t seconds = full ? 10 : 5;
                  std::vector<bench::variant> v{{std::string{a.name} + " x2", variant_params(a, 0, 2, seconds, 2)}};
                  // Replicas that fill the cores, as the paper did (not when that is x2 on 2 cores again).
                  const auto replicas = std::max<std::int64_t>(2, cores / static_cast<std::int64_t>(a.operators));
                  if (replicas != 2 || cores != 2)
                    v.push_back({std::string{a.name} + " x" + std::to_string(replicas) + '/' + std::to_string(cores),
                                 variant_params(a, 0, replicas, seconds, cores)});
                  return v;
                }));
}
