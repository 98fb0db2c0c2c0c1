#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "self_send";
  s.description = "50 actors each send themselves N messages; messages-per-activation 1/4/100";
  s.impls = {{"troupe", bench::run_troupe}, {"caf", bench::run_caf}};
  auto msgs = [](const bench::params& p) { return static_cast<double>(p.get("actors") * p.get("per_actor")); };
  s.primary = bench::rate_metric("msgs_per_s", "msg/s", msgs);
  s.variants = [](bool full) {
    std::vector<bench::variant> vs;
    const std::int64_t per_actor = full ? 1'000'000 : 200'000;
    for (std::int64_t t : {1, 4, 100})
      vs.push_back({"throughput " + std::to_string(t),
                    {{"actors", 50}, {"per_actor", per_actor}, {"max_throughput", t}, {"workers", 2}}});
    return vs;
  };
  s.instructions = bench::instruction_counting{
      [] {
        std::vector<bench::variant> vs;
        for (std::int64_t t : {1, 100})
          vs.push_back({"throughput " + std::to_string(t) + ", 1 worker",
                        {{"actors", 50}, {"per_actor", 20'000}, {"max_throughput", t}, {"workers", 1}}});
        return vs;
      },
      "msg", msgs};
  return bench::run_main(argc, argv, s);
}
