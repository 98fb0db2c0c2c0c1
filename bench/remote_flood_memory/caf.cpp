// remote_flood_memory, CAF 0.17 io: the receiver is an event-based actor that
// busy-waits slow_ns per message; the sender, a scoped actor, sends plainly
// (CAF 0.17 has no backpressure for remote actors). Both processes: 1 worker
// plus the middleman's I/O thread. A request for the receiver's figures
// would wait behind everything still queued (minutes), so the server process
// samples its RSS on a thread of its own, from its first message on, and
// writes the figures to a file that the client reads before it kills it.
#include "impls.hpp"

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <caf/io/all.hpp>

#include "common/caf_remote_support.hpp"
#include "common/caf_support.hpp"
#include "common/peer_process.hpp"

namespace {

namespace fm = bench::remote_flood_memory;

struct remote_config : bench::caf_support::config {
  remote_config() : config{1} { load<caf::io::middleman>(); }
};

std::atomic<std::int64_t> received_total{0};
std::atomic<std::int64_t> out_of_order_total{0};

struct receiver_state {
  std::int64_t received = 0;
  std::int64_t out_of_order = 0;
  double early = 0;
  std::chrono::steady_clock::time_point first{};
};

caf::behavior receiver(caf::stateful_actor<receiver_state>* self, std::int64_t slow_ns,
                       std::chrono::milliseconds quarter) {
  return {
      [=](std::int64_t seq) {
        auto& st = self->state;
        if (st.received == 0) st.first = std::chrono::steady_clock::now();
        if (seq != st.received) out_of_order_total.fetch_add(1, std::memory_order_relaxed);
        ++st.received;
        received_total.store(st.received, std::memory_order_relaxed);
        fm::spin_for_ns(slow_ns);
        (void)quarter;
      },
  };
}

void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline, std::int64_t seconds,
           std::int64_t slow_ns, const std::string& figures) {
  // The sampler: RSS a quarter in and at the end, counted from the first message.
  std::thread sampler{[seconds, figures, deadline] {
    while (received_total.load() == 0 && bench::peer::clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
    const auto t0 = bench::peer::clock::now();
    std::this_thread::sleep_until(t0 + std::chrono::milliseconds{seconds * 250});
    const double early = fm::rss_mib();
    std::this_thread::sleep_until(t0 + std::chrono::seconds{seconds});
    std::ofstream out{figures + ".tmp"};
    out << early << ' ' << fm::rss_mib() << ' ' << received_total.load() << ' ' << out_of_order_total.load() << '\n';
    out.close();
    std::rename((figures + ".tmp").c_str(), figures.c_str());
  }};
  sampler.detach();
  remote_config cfg;
  caf::actor_system sys{cfg};
  auto server = sys.spawn(receiver, slow_ns, std::chrono::milliseconds{seconds * 250});
  bench::caf_remote_support::publish_and_wait(sys, server, report, deadline);
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto seconds = p.get("seconds");
  const auto slow_ns = p.get("slow_ns");
  const auto deadline = peer::deadline_from_now(std::chrono::seconds{seconds * 3 + 60});
  const std::string figures = "/tmp/troupe_bench_flood_" + std::to_string(::getpid()) + ".txt";
  std::remove(figures.c_str());
  peer::server_process server{[deadline, seconds, slow_ns, figures](const peer::reporter& report) {
    serve(report, deadline, seconds, slow_ns, figures);
  }};
  const auto port = server.ports(deadline).at(0);

  remote_config cfg;
  caf::actor_system sys{cfg};
  const caf::actor remote = caf_remote_support::connect(sys, port);
  caf::scoped_actor self{sys};
  stopwatch sw;
  const auto start = std::chrono::steady_clock::now();
  const auto quarter = start + std::chrono::milliseconds{seconds * 250};
  const auto end = start + std::chrono::seconds{seconds};
  double client_early = 0;
  std::int64_t seq = 0;
  for (auto now = start; now < end; now = std::chrono::steady_clock::now()) {
    if (client_early == 0 && now >= quarter) client_early = fm::rss_mib();
    for (int k = 0; k < 64; ++k) self->send(remote, seq++);
  }
  const double client_end = fm::rss_mib();
  sample s;
  s.wall_s = sw.seconds();
  // What is still queued is not waited for (the receiver would need
  // minutes): the server's figures come from its sampler's file.
  double server_early = 0, server_end = 0;
  std::int64_t received = 0, out_of_order = -1;
  bool have = false;
  while (!have && peer::clock::now() < deadline) {
    std::ifstream in{figures};
    have = static_cast<bool>(in >> server_early >> server_end >> received >> out_of_order);
    if (!have) std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  std::remove(figures.c_str());
  server.kill();
  check(have, "no figures from the server process by the deadline");
  check(received > 0, "the receiver got nothing");
  check_eq("messages out of order", 0, out_of_order);
  remote_flood_memory::report(s, client_early, client_end, server_early, server_end, received);
  return s;
}
