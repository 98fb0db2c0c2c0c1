// troupe-sd: Spike Detection on troupe's streaming layer (see docs/apps.md).
//   troupe-sd [common flags] [--window N] [--threshold X]   (no --input: 1,000,000 generated readings)
//   troupe-sd --generate PATH [--lines N]                   write the deterministic input and exit
#include "sd.hpp"

int main(int argc, char** argv) {
  using namespace troupe_apps;
  return main_of(
      "troupe-sd", sd::operators, "", argc, argv,
      [](const cli& c) {
        if (!c.extra.at("generate").empty())
          return write_generated("troupe-sd", c.extra.at("generate"), sd::generate(lines_flag(c)), "readings");
        troupe::actor_system sys{app_config()};
        return sd::run(sys, c).result;
      },
      {{"window", "1000", "N", "a device's moving average spans its last N temperatures (N >= 1)"},
       {"threshold", "0.025", "X", "a spike: |temperature - moving average| > X * moving average (X > 0)"},
       {"generate", "", "PATH", "write --lines generated readings (the default input has 1000000) to PATH and exit"},
       {"lines", "1000000", "N", "readings --generate writes (1 to 100000000)"}});
}
