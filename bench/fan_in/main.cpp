#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "fan_in";
  s.description = "2 senders x 2M messages to one receiver that checks per-sender order";
  s.impls = {{"troupe", bench::run_troupe}, {"caf", bench::run_caf}, {"threads", bench::run_threads}};
  auto msgs = [](const bench::params& p) { return static_cast<double>(p.get("senders") * p.get("per_sender")); };
  s.primary = bench::rate_metric("msgs_per_s", "msg/s", msgs);
  s.variants = [](bool) {
    return std::vector<bench::variant>{
        {"2 senders, 2 workers", {{"senders", 2}, {"per_sender", 2'000'000}, {"workers", 2}}}};
  };
  s.instructions = bench::instruction_counting{
      [] {
        return std::vector<bench::variant>{
            {"2 senders, 1 worker", {{"senders", 2}, {"per_sender", 100'000}, {"workers", 1}}}};
      },
      "msg", msgs};
  return bench::run_main(argc, argv, s);
}
