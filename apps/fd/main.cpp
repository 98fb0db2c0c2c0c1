// troupe-fd: Fraud Detection on troupe's streaming layer (see docs/apps.md).
//   troupe-fd [common flags] [--model PATH]      (no --input: 800,000 generated transactions)
//   troupe-fd --generate PATH [--lines N]        write the deterministic input and exit
#include <cstdio>
#include <fstream>

#include "fd.hpp"

int main(int argc, char** argv) {
  using namespace troupe_apps;
  return main_of("troupe-fd", fd::operators, "", argc, argv,
                 [](const cli& c) {
                   if (!c.extra.at("generate").empty()) {
                     std::size_t n = 0;
                     try {
                       n = std::stoul(c.extra.at("lines"));
                     } catch (const std::exception&) {
                       throw usage_error("--lines: expected a number, got '" + c.extra.at("lines") + "'");
                     }
                     auto lines = fd::generate(n, 10'000, fd::model::load(c.extra.at("model")));
                     std::ofstream f{c.extra.at("generate")};
                     for (auto& l : lines) f << l << '\n';
                     if (!f) throw std::runtime_error("cannot write '" + c.extra.at("generate") + "'");
                     std::printf("troupe-fd: wrote %zu transactions to %s\n", n, c.extra.at("generate").c_str());
                     run_result r;
                     r.report = false;
                     return r;
                   }
                   troupe::actor_system sys;
                   return fd::run(sys, c).result;
                 },
                 {{"model", TROUPE_APPS_DATA "/fd_model.txt"}, {"generate", ""}, {"lines", "800000"}});
}
