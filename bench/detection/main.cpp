#include "impls.hpp"

#include <string>
#include <vector>

int main(int argc, char** argv) {
  using bench::detection::fault;
  bench::spec s;
  s.name = "detection";
  s.description = "time from a killed, stopped or cut-off peer process to the down_msg (ms); false alarms under load";
  s.impls = {{"troupe", bench::run_troupe}};
  s.primary = bench::extra_metric("detection_ms", "ms", false, "detection_ms");
  s.variants = [](bool full) {
    std::vector<bench::variant> vs;
    const std::pair<const char*, fault> faults[] = {{"kill", fault::kill}, {"stop", fault::stop}, {"cut", fault::cut}};
    for (const auto& [name, f] : faults)
      for (const bool lan : {false, true})
        vs.push_back({std::string{name} + (lan ? " lan" : " default"),
                      {{"fault", static_cast<std::int64_t>(f)},
                       {"lan", lan ? 1 : 0},
                       {"warmup_ms", lan ? 800 : 8000},
                       {"jitter_ms", 10}}});
    for (const bool lan : {false, true})
      vs.push_back({lan ? "hogs lan" : "hogs default",
                    {{"fault", static_cast<std::int64_t>(fault::none)},
                     {"lan", lan ? 1 : 0},
                     {"hogs", 2},
                     {"seconds", full ? 60 : 20},
                     {"jitter_ms", 10}},
                    bench::extra_metric("false_unreachable", "count", false, "false_unreachable")});
    return vs;
  };
  s.default_runs = 5;
  s.full_runs = 5;
  s.timeout_s = 180;  // above the runs' own time limit (impls.hpp: at most 120 s)
  return bench::run_main(argc, argv, s);
}
