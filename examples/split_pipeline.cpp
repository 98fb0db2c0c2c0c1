// split_pipeline: one pipeline description, run across two processes (ranks):
// the source on rank 0, a farm of 4 by-key counters with two replicas on each
// rank (placed in the description), the sink back on rank 0. Every process
// runs the same code with its own rank:
//   split_pipeline 0 tcp://127.0.0.1:7000,tcp://127.0.0.1:7001 &
//   split_pipeline 1 tcp://127.0.0.1:7000,tcp://127.0.0.1:7001
// Without arguments both ranks run here, each with its own actor system and
// node, talking over loopback TCP (plaintext, for the demo; see docs/net.md
// for the keys of a real run).
#include <troupe/net.hpp>

#include <algorithm>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace net = troupe::net;
namespace st = troupe::stream;

// [split_1]
struct reading {
  std::uint32_t sensor = 0;
  double value = 0;
  std::uint64_t seen = 0;  // readings of this sensor so far (set by the counter)
};

/// Counts the readings of each sensor: its replica owns its sensors (by key).
struct counter : st::node<reading, reading> {
  std::map<std::uint32_t, std::uint64_t> per_sensor;
  void consume(reading& r) {
    r.seen = ++per_sensor[r.sensor];
    send_next(std::move(r));
  }
};

auto graph(std::map<std::uint32_t, std::uint64_t>& last, std::mutex& m) {
  auto by_sensor = troupe::by_key{[](const reading& r) { return r.sensor; }};
  auto source = st::source([i = 0u]() mutable -> std::optional<reading> {
    if (i == 100'000) return std::nullopt;
    ++i;
    return reading{i % 10, i * 0.5, 0};
  });
  auto sink = st::sink([&](const reading& r) {
    std::lock_guard<std::mutex> g{m};
    last[r.sensor] = std::max(last[r.sensor], r.seen);
  });
  // Counter replicas 0 and 2 on rank 0, 1 and 3 on rank 1; the rest on rank 0.
  return troupe::pipeline{source,
                          troupe::placed{troupe::farm{counter{}, 4, by_sensor}, troupe::placement::ranks("0,1")}, sink};
}
// [/split_1]

int run_rank(std::size_t rank, const std::vector<net::remote_address>& peers, std::promise<std::string>* bound,
             std::future<std::string>* other) {
  // [split_2]
  net::add_type<reading>("example.reading");  // elements cross by name, on every rank
  troupe::actor_system sys;
  net::node_config cfg;
  cfg.security = net::security::plaintext;
  cfg.name = "rank " + std::to_string(rank);
  net::node node{sys, cfg};
  net::cluster cluster{sys, node, {.rank = rank, .peers = peers}};
  // [/split_2]
  if (bound != nullptr) {  // both ranks in this process: tell each other the ports bound
    bound->set_value(cluster.self_address().endpoint);
    cluster.set_peer(1 - rank, {other->get(), ""});
  }
  std::map<std::uint32_t, std::uint64_t> last;
  std::mutex m;
  // [split_3]
  // The parts without a rank placement (source, sink) run on rank 0.
  auto part = net::split(cluster, graph(last, m));
  try {
    part.wait();                           // this rank's part has ended
  } catch (const net::channel_error& e) {  // a peer was lost, or its part failed: named here
    std::printf("rank %zu: %s\n", rank, e.what());
    return 1;
  }
  // [/split_3]
  if (rank == 0) {
    std::uint64_t total = 0;
    for (auto& [sensor, n] : last) total += n;
    std::printf("rank 0: %zu sensors, %llu readings counted across both ranks\n", last.size(),
                static_cast<unsigned long long>(total));
    return total == 100'000 ? 0 : 1;
  }
  std::printf("rank %zu: done\n", rank);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3) {  // one rank of a run by hand
    std::vector<net::remote_address> peers;
    std::string list = argv[2];
    for (std::size_t from = 0; from <= list.size();) {
      auto to = list.find(',', from);
      if (to == std::string::npos) to = list.size();
      peers.push_back({list.substr(from, to - from), ""});
      from = to + 1;
    }
    return run_rank(std::stoul(argv[1]), peers, nullptr, nullptr);
  }
  const std::vector<net::remote_address> any(2, {"tcp://127.0.0.1:*", ""});
  std::promise<std::string> ep0, ep1;
  auto f0 = ep0.get_future(), f1 = ep1.get_future();
  auto rank1 = std::async(std::launch::async, [&] { return run_rank(1, any, &ep1, &f0); });
  const int rc = run_rank(0, any, &ep0, &f1);
  return rc | rank1.get();
}
