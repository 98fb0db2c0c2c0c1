#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "remote_slow_consumer";
  s.description = "a full-speed source streams to a slow sink in another process: RSS of both over time (end / at 5 s)";
  s.impls = {{"troupe", bench::run_troupe}, {"zmq", bench::run_zmq}};
  // rss_growth: the larger of the two sides' end / at-5-s ratios.
  s.primary = bench::metric{"rss_growth", "x", false, [](const bench::sample& smp, const bench::params&) {
                              double growth = 0;
                              for (const char* side : {"rss_client_ratio", "rss_server_ratio"})
                                if (auto it = smp.extra.find(side); it != smp.extra.end() && it->second.value > growth)
                                  growth = it->second.value;
                              return growth;
                            }};
  s.variants = [](bool full) {
    return std::vector<bench::variant>{{"slow sink", {{"seconds", full ? 20 : 6}, {"slow_ns", 1000}}}};
  };
  s.default_runs = 3;
  s.full_runs = 3;
  s.timeout_s = 150;  // above the runs' own time limit (impls.hpp: 78 s quick, 120 s full)
  return bench::run_main(argc, argv, s);
}
