// troupe-fd: Fraud Detection on troupe's streaming layer (see docs/apps.md).
//   troupe-fd [common flags] [--model PATH]      (no --input: 800,000 generated transactions)
//   troupe-fd --generate PATH [--lines N]        write the deterministic input and exit
#include "fd.hpp"

int main(int argc, char** argv) {
  using namespace troupe_apps;
  std::vector<app_flag> flags{
      {"model", TROUPE_APPS_DATA "/fd_model.txt", "PATH",
       "the Markov model: a line of 18 state labels, then 18 rows of 18 transition probabilities"},
      {"generate", "", "PATH", "write --lines generated transactions (the default input) to PATH and exit"},
      {"lines", "800000", "N", "transactions --generate writes (1 to 100000000)"}};
  for (auto& f : split_flags()) flags.push_back(f);
  return main_of(
      "troupe-fd", fd::operators, "", argc, argv,
      [](const cli& c) {
        if (!c.extra.at("generate").empty())
          return write_generated("troupe-fd", c.extra.at("generate"),
                                 fd::generate(lines_flag(c), 10'000, fd::model::load(c.extra.at("model"))),
                                 "transactions");
        troupe::actor_system sys{app_config()};
        return fd::run(sys, c).result;
      },
      flags);
}
