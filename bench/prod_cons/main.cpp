#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "prod_cons";
  s.description = "one producer sends int32 messages to one consumer, ns per message";
  s.impls = {{"troupe", bench::run_troupe}, {"caf", bench::run_caf}, {"threads", bench::run_threads}};
  auto msgs = [](const bench::params& p) { return static_cast<double>(p.get("messages")); };
  s.primary = bench::ns_per_item_metric("ns_per_msg", "ns/msg", msgs);
  // Quick and full use the same 20M messages (the figure depends on the
  // count when the consumer's mailbox grows); --full only adds runs.
  s.variants = [](bool) {
    return std::vector<bench::variant>{{"2 workers", {{"messages", 20'000'000}, {"workers", 2}}}};
  };
  s.instructions = bench::instruction_counting{
      [] { return std::vector<bench::variant>{{"1 worker", {{"messages", 200'000}, {"workers", 1}}}}; }, "msg", msgs};
  return bench::run_main(argc, argv, s);
}
