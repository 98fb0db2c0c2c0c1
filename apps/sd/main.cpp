// troupe-sd: Spike Detection on troupe's streaming layer (see docs/apps.md).
//   troupe-sd [common flags] [--window N] [--threshold X]   (no --input: 1,000,000 generated readings)
//   troupe-sd --generate PATH [--lines N]                   write the deterministic input and exit
#include <cstdio>
#include <fstream>

#include "sd.hpp"

int main(int argc, char** argv) {
  using namespace troupe_apps;
  return main_of("troupe-sd", sd::operators, "", argc, argv,
                 [](const cli& c) {
                   if (!c.extra.at("generate").empty()) {
                     std::size_t n = 0;
                     try {
                       n = std::stoul(c.extra.at("lines"));
                     } catch (const std::exception&) {
                       throw usage_error("--lines: expected a number, got '" + c.extra.at("lines") + "'");
                     }
                     std::ofstream f{c.extra.at("generate")};
                     for (auto& l : sd::generate(n)) f << l << '\n';
                     if (!f) throw std::runtime_error("cannot write '" + c.extra.at("generate") + "'");
                     std::printf("troupe-sd: wrote %zu readings to %s\n", n, c.extra.at("generate").c_str());
                     run_result r;
                     r.report = false;
                     return r;
                   }
                   troupe::actor_system sys;
                   return sd::run(sys, c).result;
                 },
                 {{"window", "1000"}, {"threshold", "0.025"}, {"generate", ""}, {"lines", "1000000"}});
}
