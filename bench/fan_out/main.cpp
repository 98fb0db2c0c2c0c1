#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "fan_out";
  s.description = "1 producer publishes 100k messages to a topic with 100 subscribers";
  s.impls = {{"troupe", bench::run_troupe}, {"caf", bench::run_caf}};
  auto deliveries = [](const bench::params& p) {
    return static_cast<double>(p.get("subscribers") * p.get("messages"));
  };
  s.primary = bench::rate_metric("deliveries_per_s", "deliveries/s", deliveries);
  s.variants = [](bool) {
    return std::vector<bench::variant>{
        {"100 subscribers, 2 workers", {{"subscribers", 100}, {"messages", 100'000}, {"workers", 2}}}};
  };
  s.instructions = bench::instruction_counting{
      [] {
        return std::vector<bench::variant>{
            {"100 subscribers, 1 worker", {{"subscribers", 100}, {"messages", 10'000}, {"workers", 1}}}};
      },
      "delivery", deliveries};
  return bench::run_main(argc, argv, s);
}
