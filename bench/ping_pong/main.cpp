#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "ping_pong";
  s.description = "round trips between two actors, msgs/s counting both directions";
  s.impls = {{"troupe", bench::run_troupe}, {"caf", bench::run_caf}, {"threads", bench::run_threads}};
  auto msgs = [](const bench::params& p) { return 2.0 * static_cast<double>(p.get("round_trips")); };
  s.primary = bench::rate_metric("msgs_per_s", "msg/s", msgs);
  s.variants = [](bool) {
    std::vector<bench::variant> vs;
    for (std::int64_t w : {1, 2})
      vs.push_back(
          {std::to_string(w) + (w == 1 ? " worker" : " workers"), {{"round_trips", 1'000'000}, {"workers", w}}});
    return vs;
  };
  s.instructions = bench::instruction_counting{
      [] { return std::vector<bench::variant>{{"1 worker", {{"round_trips", 100'000}, {"workers", 1}}}}; }, "msg",
      msgs};
  return bench::run_main(argc, argv, s);
}
