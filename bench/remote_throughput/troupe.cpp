// remote_throughput, troupe::net: the server process publishes an event
// actor that counts the 64-byte messages (a std::array<char, 64>: its bytes
// in one copy) and answers the end marker with
// its count. The client's scoped (blocking) actor sends with send_if against
// the proxy's mailbox (limit 4096): when the network does not keep up, the
// proxy fills and the sender yields its thread until there is room again, so
// memory stays bounded without acknowledgement windows (CAF needs those).
// troupe: plaintext TCP; troupe_curve: CURVE. Both processes: 1 worker, plus
// the node's I/O thread and ZeroMQ's. troupe_fields and troupe_raw (plaintext)
// send a 64-byte struct with padding and a bool instead: field by field (53
// bytes on the wire, the bool checked), and the same struct opted in to cross
// as its 64 bytes (troupe::net::raw_bytes): the cost of the safe wire.
#include "impls.hpp"

#include <array>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "common/peer_process.hpp"
#include "common/record64.hpp"
#include "common/troupe_net_support.hpp"

namespace {

namespace tn = bench::troupe_net_support;
using payload = std::array<char, bench::remote_throughput::payload_bytes>;
struct done_atom {};
struct stop_atom {};
constexpr std::size_t proxy_limit = 4096;
using bench::record64;
using bench::record64_raw;
static_assert(sizeof(record64) == bench::remote_throughput::payload_bytes);

void register_types() {
  troupe::net::add_type<record64>("record64");
  troupe::net::add_type<record64_raw>("record64");
  troupe::net::add_type<done_atom>("done_atom");
  troupe::net::add_type<stop_atom>("stop_atom");
  troupe::net::add_message<payload>();
  troupe::net::add_message<record64>();
  troupe::net::add_message<record64_raw>();
  troupe::net::add_message<done_atom>();
  troupe::net::add_message<stop_atom>();
  troupe::net::add_message<std::int64_t>();
}

template <class Payload>
void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline, bool curve,
           const tn::keys& keys) {
  register_types();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node{sys, tn::config(curve, keys, true)};
  std::promise<void> stopped;
  node.publish(sys.spawn([&stopped](troupe::stateful_actor<std::int64_t>& self) {
    return troupe::behavior{[&self](const Payload&) { ++self.state(); }, [&self](done_atom) { return self.state(); },
                            [&stopped](stop_atom) { stopped.set_value(); }};
  }),
               "counter");
  tn::listen_and_wait(node, report, stopped.get_future(), deadline);
}

template <class Payload>
bench::sample run(const bench::params& p, bool curve, const Payload& data) {
  using namespace bench;
  const auto messages = p.get("messages");
  const auto deadline = peer::deadline_from_now(remote_throughput::time_limit(messages));
  const tn::keys keys;
  peer::server_process server{
      [deadline, curve, &keys](const peer::reporter& report) { serve<Payload>(report, deadline, curve, keys); }};
  const auto port = server.ports(deadline).at(0);

  register_types();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node{sys, tn::config(curve, keys, false)};
  auto counter = tn::connect(node, port, keys.server.public_key, "counter");
  troupe::scoped_actor self{sys};
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

namespace {
payload filled() {
  payload data;
  data.fill('x');
  return data;
}
template <class R>
R record() {
  R r;
  r.id = 42;
  r.kind = 7;
  for (int i = 0; i < 5; ++i) r.values[i] = i * 0.5;
  r.flag = true;
  return r;
}
}  // namespace

bench::sample bench::run_troupe(const params& p) { return run(p, false, filled()); }
bench::sample bench::run_troupe_curve(const params& p) { return run(p, true, filled()); }
bench::sample bench::run_troupe_fields(const params& p) { return run(p, false, record<record64>()); }
bench::sample bench::run_troupe_raw(const params& p) { return run(p, false, record<record64_raw>()); }
