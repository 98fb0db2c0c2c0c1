#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "prod_cons_typed";
  s.description = "one producer -> one consumer of int64 over one typed channel, ns per item";
  s.impls = {{"troupe", bench::run_troupe},
             {"troupe_pool", bench::run_troupe_pool},
             {"raw_queue", bench::run_raw_queue},
             {"rwq", bench::run_rwq},
             {"lamport", bench::run_lamport}};
  auto items = [](const bench::params& p) { return static_cast<double>(p.get("items")); };
  s.primary = bench::ns_per_item_metric("ns_per_item", "ns/item", items);
  s.variants = [](bool full) {
    return std::vector<bench::variant>{
        {"1 channel of 1024", {{"items", full ? 20'000'000 : 5'000'000}, {"workers", 2}}}};
  };
  s.default_runs = 3;
  s.instructions = bench::instruction_counting{
      [] { return std::vector<bench::variant>{{"1 worker", {{"items", 500'000}, {"workers", 1}}}}; },
      "item",
      items,
      {},
      {"lamport"}};
  return bench::run_main(argc, argv, s);
}
