// remote_flood_memory: a fast sender floods a slow receiver in another
// process for `seconds`; what matters is the memory of both processes.
//
// params:
//   seconds   how long the sender sends (quick 6, full 20)
//   slow_ns   work per message at the receiver (busy wait; 20'000 ns: the
//             receiver handles at most 50'000 msg/s, far below what the
//             sender could send)
// Both processes sample their own resident set (/proc/self/statm, the
// current RSS, not the peak) at a quarter of the run (5 s of 20) and at its
// end. Figures: rss_growth = the larger of end/early over both processes (the
// primary figure; 1.0 is flat), and client_rss_early_mib, client_rss_end_mib,
// server_rss_early_mib, server_rss_end_mib, received (messages the receiver
// handled in the run).
// Check: the receiver got messages, in order (each carries its sequence
// number).
// Impls: troupe (troupe::net, plaintext; the sender uses send_if against the
// proxy's mailbox: the proxy fills when the network is held back by the slow
// receiver's node, which stops reading while the receiver's mailbox is over
// its soft limit); caf (CAF 0.17 io; the sender sends plainly, as CAF offers
// no backpressure: what a CAF user gets).
#pragma once

#include <unistd.h>
#include <cstdint>
#include <cstdio>

#include "common/harness.hpp"

namespace bench {

sample run_troupe(const params& p);
sample run_caf(const params& p);

namespace remote_flood_memory {

/// Current resident set of this process in MiB.
inline double rss_mib() {
  long pages_total = 0, pages_resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

/// The figures, from the four samples.
inline void report(sample& s, double client_early, double client_end, double server_early, double server_end,
                   std::int64_t received) {
  s.add("client_rss_early_mib", client_early, "MiB");
  s.add("client_rss_end_mib", client_end, "MiB");
  s.add("server_rss_early_mib", server_early, "MiB");
  s.add("server_rss_end_mib", server_end, "MiB");
  s.add("received", static_cast<double>(received), "msg", true);
  double g1 = client_early > 0 ? client_end / client_early : 0;
  double g2 = server_early > 0 ? server_end / server_early : 0;
  s.add("rss_growth", g1 > g2 ? g1 : g2, "x");
}

/// Busy work of `ns` nanoseconds.
void spin_for_ns(std::int64_t ns);

}  // namespace remote_flood_memory
}  // namespace bench
