// troupe-lr: Linear Road (tolls) on troupe's streaming layer (see docs/apps.md).
//   troupe-lr [common flags] [--minutes M] [--xways X]   (no --input: M minutes of generated traffic on X expressways)
//   troupe-lr --generate PATH [--minutes M] [--xways X]  write the deterministic input and exit
#include <cstdio>
#include <fstream>

#include "lr.hpp"

int main(int argc, char** argv) {
  using namespace troupe_apps;
  return main_of("troupe-lr", lr::operators, "", argc, argv,
                 [](const cli& c) {
                   if (!c.extra.at("generate").empty()) {
                     const auto& path = c.extra.at("generate");
                     auto lines = lr::generate(c);
                     std::ofstream f{path};
                     for (auto& l : lines) f << l << '\n';
                     if (!f) throw std::runtime_error("cannot write '" + path + "'");
                     std::printf("troupe-lr: wrote %zu position reports and queries to %s\n", lines.size(),
                                 path.c_str());
                     run_result r;
                     r.report = false;
                     return r;
                   }
                   troupe::actor_system sys{app_config()};
                   auto o = lr::run(sys, c);
                   std::printf("tolls: %llu assessed, %llu charged\n", static_cast<unsigned long long>(o.assessed),
                               static_cast<unsigned long long>(o.charged));
                   return o.result;
                 },
                 {{"minutes", "180"}, {"xways", "1"}, {"generate", ""}});
}
