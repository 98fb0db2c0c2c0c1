// remote_throughput, troupe::net: the server process publishes an event
// actor that counts the 64-byte messages (a trivially copyable
// std::array<char, 64>: sent as raw bytes) and answers the end marker with
// its count. The client's scoped (blocking) actor sends with send_if against
// the proxy's mailbox (limit 4096): when the network does not keep up, the
// proxy fills and the sender yields its thread until there is room again, so
// memory stays bounded without acknowledgement windows (CAF needs those).
// troupe: plaintext TCP; troupe_curve: CURVE. Both processes: 1 worker, plus
// the node's I/O thread and ZeroMQ's.
#include "impls.hpp"

#include <array>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "common/peer_process.hpp"
#include "common/troupe_net_support.hpp"

namespace {

namespace tn = bench::troupe_net_support;
using payload = std::array<char, bench::remote_throughput::payload_bytes>;
struct done_atom {};
struct stop_atom {};
constexpr std::size_t proxy_limit = 4096;

void register_types() {
  troupe::net::add_type<payload>("payload64");
  troupe::net::add_type<done_atom>("done_atom");
  troupe::net::add_type<stop_atom>("stop_atom");
  troupe::net::add_message<payload>();
  troupe::net::add_message<done_atom>();
  troupe::net::add_message<stop_atom>();
  troupe::net::add_message<std::int64_t>();
}

void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline, bool curve,
           const tn::keys& keys) {
  register_types();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node{sys, tn::config(curve, keys, true)};
  std::promise<void> stopped;
  node.publish(sys.spawn([&stopped](troupe::stateful_actor<std::int64_t>& self) {
    return troupe::behavior{[&self](const payload&) { ++self.state(); }, [&self](done_atom) { return self.state(); },
                            [&stopped](stop_atom) { stopped.set_value(); }};
  }),
               "counter");
  tn::listen_and_wait(node, report, stopped.get_future(), deadline);
}

bench::sample run(const bench::params& p, bool curve) {
  using namespace bench;
  const auto messages = p.get("messages");
  const auto deadline = peer::deadline_from_now(remote_throughput::time_limit(messages));
  const tn::keys keys;
  peer::server_process server{
      [deadline, curve, &keys](const peer::reporter& report) { serve(report, deadline, curve, keys); }};
  const auto port = server.ports(deadline).at(0);

  register_types();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node{sys, tn::config(curve, keys, false)};
  auto counter = tn::connect(node, port, keys.server.public_key, "counter");
  troupe::scoped_actor self{sys};
  payload data;
  data.fill('x');
  std::string failure;
  stopwatch sw;
  for (std::int64_t i = 0; i < messages && failure.empty(); ++i) {
    while (!self->send_if(counter, proxy_limit, data)) {
      std::this_thread::yield();
      if (peer::clock::now() >= deadline) {
        failure = "deadline passed after " + std::to_string(i) + " messages";
        break;
      }
    }
  }
  std::int64_t counted = -1;
  if (failure.empty())
    self->request(counter, std::chrono::seconds{60}, done_atom{})
        .receive([&](std::int64_t n) { counted = n; }, [&](troupe::error& e) { failure = e.to_string(); });
  sample s;
  s.wall_s = sw.seconds();
  check(failure.empty(), failure);
  self->send(counter, stop_atom{});
  server.join(deadline);
  check_eq("messages counted by the receiver", messages, counted);
  return s;
}

}  // namespace

bench::sample bench::run_troupe(const params& p) { return run(p, false); }
bench::sample bench::run_troupe_curve(const params& p) { return run(p, true); }
