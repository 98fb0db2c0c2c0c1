// troupe-sd: Spike Detection on troupe's streaming layer (see docs/apps.md).
//   troupe-sd [common flags] [--window N] [--threshold X]   (no --input: 1,000,000 generated readings)
//   troupe-sd --generate PATH [--lines N]                   write the deterministic input and exit
#include "sd.hpp"

int main(int argc, char** argv) {
  using namespace troupe_apps;
  return main_of("troupe-sd", sd::operators, "", argc, argv,
                 [](const cli& c) {
                   if (!c.extra.at("generate").empty())
                     return write_generated("troupe-sd", c, "readings", [&](std::size_t n) { return sd::generate(n); });
                   troupe::actor_system sys{app_config()};
                   return sd::run(sys, c).result;
                 },
                 {{"window", "1000"}, {"threshold", "0.025"}, {"generate", ""}, {"lines", "1000000"}});
}
