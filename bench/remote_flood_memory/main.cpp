#include <chrono>

#include "impls.hpp"

void bench::remote_flood_memory::spin_for_ns(std::int64_t ns) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds{ns};
  while (std::chrono::steady_clock::now() < until) {
  }
}

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "remote_flood_memory";
  s.description =
      "a fast sender floods a slow receiver in another process: RSS growth (end / a quarter in), both sides";
  s.impls = {{"troupe", bench::run_troupe}, {"caf", bench::run_caf}};
  s.primary = bench::metric{"rss_growth", "x", false, [](const bench::sample& smp, const bench::params&) {
                              auto it = smp.extra.find("rss_growth");
                              return it == smp.extra.end() ? 0.0 : it->second.value;
                            }};
  s.variants = [](bool full) {
    return std::vector<bench::variant>{{"slow receiver", {{"seconds", full ? 20 : 6}, {"slow_ns", 20'000}}}};
  };
  s.default_runs = 3;
  s.full_runs = 3;
  s.timeout_s = 120;
  return bench::run_main(argc, argv, s);
}
