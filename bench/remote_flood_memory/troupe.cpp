// remote_flood_memory, troupe::net (plaintext): the receiver is an event
// actor that busy-waits slow_ns per message; the sender, a scoped actor,
// sends with send_if against the proxy (limit 4096) and yields its thread
// while the proxy is full. Both processes: 1 worker.
#include "impls.hpp"

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <tuple>

#include "common/peer_process.hpp"
#include "common/troupe_net_support.hpp"

namespace {

namespace tn = bench::troupe_net_support;
namespace fm = bench::remote_flood_memory;
struct report_atom {};
struct stop_atom {};

void register_types() {
  troupe::net::add_type<report_atom>("report_atom");
  troupe::net::add_type<stop_atom>("stop_atom");
  troupe::net::add_message<std::int64_t>();
  troupe::net::add_message<report_atom>();
  troupe::net::add_message<stop_atom>();
  troupe::net::add_message<double, double, std::int64_t, std::int64_t>();
}

struct receiver_state {
  std::int64_t received = 0;
  std::int64_t out_of_order = 0;
  double early = 0;
  std::chrono::steady_clock::time_point first{};
};

void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline, std::int64_t seconds,
           std::int64_t slow_ns) {
  register_types();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node{sys, tn::config(false, tn::keys{}, true)};
  std::promise<void> stopped;
  const auto quarter = std::chrono::milliseconds{seconds * 250};
  node.publish(sys.spawn([&stopped, slow_ns, quarter](troupe::stateful_actor<receiver_state>& self) {
    return troupe::behavior{[&self, slow_ns, quarter](std::int64_t seq) {
                              auto& st = self.state();
                              if (st.received == 0) st.first = std::chrono::steady_clock::now();
                              if (seq != st.received) ++st.out_of_order;
                              ++st.received;
                              fm::spin_for_ns(slow_ns);
                              if (st.early == 0 && std::chrono::steady_clock::now() - st.first >= quarter)
                                st.early = fm::rss_mib();
                            },
                            [&self](report_atom) {
                              auto& st = self.state();
                              return std::make_tuple(st.early, fm::rss_mib(), st.received, st.out_of_order);
                            },
                            [&stopped](stop_atom) { stopped.set_value(); }};
  }),
               "receiver");
  tn::listen_and_wait(node, report, stopped.get_future(), deadline);
}

}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto seconds = p.get("seconds");
  const auto slow_ns = p.get("slow_ns");
  const auto deadline = peer::deadline_from_now(std::chrono::seconds{seconds * 3 + 60});
  peer::server_process server{
      [deadline, seconds, slow_ns](const peer::reporter& report) { serve(report, deadline, seconds, slow_ns); }};
  const auto port = server.ports(deadline).at(0);

  register_types();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node{sys, tn::config(false, tn::keys{}, false)};
  auto receiver = tn::connect(node, port, "", "receiver");
  troupe::scoped_actor self{sys};
  stopwatch sw;
  const auto start = std::chrono::steady_clock::now();
  const auto quarter = start + std::chrono::milliseconds{seconds * 250};
  const auto end = start + std::chrono::seconds{seconds};
  double client_early = 0;
  std::int64_t seq = 0;
  for (auto now = start; now < end; now = std::chrono::steady_clock::now()) {
    if (client_early == 0 && now >= quarter) client_early = fm::rss_mib();
    if (self->send_if(receiver, 4096, seq)) ++seq;
    else std::this_thread::yield();
  }
  const double client_end = fm::rss_mib();
  sample s;
  s.wall_s = sw.seconds();
  double server_early = 0, server_end = 0;
  std::int64_t received = 0, out_of_order = -1;
  std::string failure;
  self->request(receiver, std::chrono::seconds{60}, report_atom{})
      .receive(
          [&](double e, double n, std::int64_t r, std::int64_t o) {
            server_early = e;
            server_end = n;
            received = r;
            out_of_order = o;
          },
          [&](troupe::error& e) { failure = e.to_string(); });
  check(failure.empty(), "report: " + failure);
  self->send(receiver, stop_atom{});
  server.join(deadline);
  check(received > 0, "the receiver got nothing");
  check_eq("messages out of order", 0, out_of_order);
  remote_flood_memory::report(s, client_early, client_end, server_early, server_end, received);
  return s;
}
