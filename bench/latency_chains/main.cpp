#include "impls.hpp"

#include <utility>

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "latency_chains";
  s.description = "20 chains of 8 actors at 1000 msg/s, one heavy map step per chain: mean end-to-end latency";
  s.impls = {{"troupe", bench::run_troupe}, {"troupe_seq", bench::run_troupe_seq}, {"caf", bench::run_caf}};
  s.primary = bench::metric{"avg_latency_us", "us", false,
                            [](const bench::sample& x, const bench::params&) { return x.wall_s * 1e6; }};
  s.variants = [](bool full) {
    std::vector<bench::variant> vs;
    // threads: scheduler workers + accelerator team (troupe only; the others use `workers`)
    for (auto [workers, team] : {std::pair<std::int64_t, std::int64_t>{2, 2}, {1, 1}})
      vs.push_back(
          {std::to_string(workers) + (workers == 1 ? " worker + " : " workers + ") + std::to_string(team) + " map",
           {{"chains", 20},
            {"length", 8},
            {"heavy", 3},
            {"rate", 1000},
            {"messages", full ? 5000 : 1000},
            {"elements", 5000},
            {"spin", 60},
            {"workers", workers},
            {"map_workers", team}}});
    return vs;
  };
  s.default_runs = 3;
  return bench::run_main(argc, argv, s);
}
