#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "remote_pipeline";
  s.description = "Source | Forwarder -> Sink split across two processes over loopback TCP, 24-byte tuples, tuples/s";
  s.impls = {{"troupe", bench::run_troupe}, {"troupe_curve", bench::run_troupe_curve}, {"zmq", bench::run_zmq}};
  s.primary = bench::rate_metric("tuples_per_s", "tuples/s",
                                 [](const bench::params& p) { return static_cast<double>(p.get("tuples")); });
  s.variants = [](bool full) {
    return std::vector<bench::variant>{{"placement 0;1;1", {{"tuples", full ? 20'000'000 : 5'000'000}}}};
  };
  s.default_runs = 3;
  s.timeout_s = 300;  // above the runs' own time limit (impls.hpp)
  return bench::run_main(argc, argv, s);
}
