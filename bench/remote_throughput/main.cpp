#include "impls.hpp"

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "remote_throughput";
  s.description = "one-way 64-byte messages between two processes over loopback TCP, one ack at the end, msgs/s";
  s.impls = {{"troupe", bench::run_troupe},
             {"troupe_curve", bench::run_troupe_curve},
             {"troupe_fields", bench::run_troupe_fields},
             {"troupe_raw", bench::run_troupe_raw},
             {"caf", bench::run_caf},
             {"zmq", bench::run_zmq}};
  s.primary = bench::rate_metric("msgs_per_s", "msg/s",
                                 [](const bench::params& p) { return static_cast<double>(p.get("messages")); });
  s.variants = [](bool full) {
    return std::vector<bench::variant>{{"64 B", {{"messages", full ? 10'000'000 : 1'000'000}}}};
  };
  s.timeout_s = 300;  // above the runs' own time limit (impls.hpp)
  return bench::run_main(argc, argv, s);
}
