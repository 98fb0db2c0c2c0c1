// troupe-lr: Linear Road (tolls) on troupe's streaming layer (see docs/apps.md).
//   troupe-lr [common flags] [--minutes M] [--xways X]   (no --input: M minutes of generated traffic on X expressways)
//   troupe-lr --generate PATH [--minutes M] [--xways X]  write the deterministic input and exit
#include <cstdio>

#include "lr.hpp"

int main(int argc, char** argv) {
  using namespace troupe_apps;
  return main_of(
      "troupe-lr", lr::operators, "", argc, argv,
      [](const cli& c) {
        if (!c.extra.at("generate").empty())
          return write_generated("troupe-lr", c.extra.at("generate"), lr::generate(c), "position reports and queries");
        troupe::actor_system sys{app_config()};
        auto o = lr::run(sys, c);
        std::printf("tolls: %llu assessed, %llu charged\n", static_cast<unsigned long long>(o.assessed),
                    static_cast<unsigned long long>(o.charged));
        return o.result;
      },
      {{"minutes", "180", "M", "minutes of generated traffic, 1 to 1440 (the input without --input, or --generate's)"},
       {"xways", "1", "X", "expressways of generated traffic, 1 to 100"},
       {"generate", "", "PATH", "write the generated traffic (--minutes, --xways) to PATH and exit"}});
}
