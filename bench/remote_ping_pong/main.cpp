#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "remote_ping_pong";
  s.description = "round trips of an int64 between two processes over loopback TCP, rt/s and latency percentiles";
  s.impls = {{"troupe", bench::run_troupe},
             {"troupe_curve", bench::run_troupe_curve},
             {"caf", bench::run_caf},
             {"zmq", bench::run_zmq}};
  s.primary = bench::rate_metric("round_trips_per_s", "rt/s",
                                 [](const bench::params& p) { return static_cast<double>(p.get("round_trips")); });
  s.variants = [](bool full) {
    return std::vector<bench::variant>{{"loopback", {{"round_trips", full ? 200'000 : 20'000}}}};
  };
  s.timeout_s = 300;  // above the runs' own time limit (impls.hpp)
  return bench::run_main(argc, argv, s);
}
