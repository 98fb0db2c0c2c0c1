// split_pipeline: one pipeline description, run across two processes (ranks):
// the source on rank 0, a farm of 4 by-key counters with two replicas on each
// rank (placed in the description), the sink back on rank 0. The ranks talk
// over CURVE (encrypted, each accepting only the other's public key), and
// each listens on a port the system picks ("tcp://127.0.0.1:*"), so they
// tell each other where they listen.
// Without arguments both ranks run here, each with its own actor system and
// node, their keys made on the spot and their ports passed in memory. By
// hand, as two processes that meet in a directory (a fresh one per run):
//   d=$(mktemp -d) && troupe-keygen $d/rank0 && troupe-keygen $d/rank1
//   split_pipeline 1 $d & split_pipeline 0 $d
// where each rank reads its own key pair and the other's public key, and
// writes the endpoint it bound to $d/rank<R>.endpoint for the other to read.
#include <troupe/net.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace net = troupe::net;
namespace st = troupe::stream;

// [split_1]
struct reading {
  std::uint32_t sensor = 0;
  double value = 0;
  std::uint64_t seen = 0;                                  // readings of this sensor so far (set by the counter)
  auto fields() { return std::tie(sensor, value, seen); }  // how it crosses between ranks
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

/// What a rank knows before it starts: its key pair, and each rank's public
/// key in rank order.
struct rank_keys {
  net::key_pair mine;
  std::vector<std::string> public_keys;
};

/// How a rank learns where the others listen: given the endpoint it bound,
/// returns where rank r listens (here: in memory, or through files).
using meet = std::function<std::string(std::size_t r, const std::string& bound)>;

int run_rank(std::size_t rank, const rank_keys& keys, const meet& where) {
  // [split_2]
  net::add_type<reading>("example.reading");  // elements cross by name, on every rank
  troupe::actor_system sys;
  net::node_config cfg;
  cfg.name = "rank " + std::to_string(rank);
  cfg.keys = keys.mine;  // CURVE (the default): this rank's key pair...
  for (std::size_t r = 0; r < keys.public_keys.size(); ++r)
    if (r != rank) cfg.trusted_keys.push_back(keys.public_keys[r]);  // ...and whom it lets in
  net::node node{sys, cfg};
  // Every rank listens on a free port: its own address is resolved when the
  // cluster binds it, the others' are filled in below.
  std::vector<net::remote_address> peers;
  for (const auto& key : keys.public_keys) peers.push_back({"tcp://127.0.0.1:*", key});
  net::cluster cluster{sys, node, {.rank = rank, .peers = peers}};
  // [/split_2]
  // [split_ports]
  const std::string bound = cluster.self_address().endpoint;  // "tcp://127.0.0.1:41873"
  for (std::size_t r = 0; r < peers.size(); ++r)
    if (r != rank) cluster.set_peer(r, {where(r, bound), keys.public_keys[r]});
  // [/split_ports]
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

// [split_meet]
/// Two processes meet in a directory: each writes the endpoint it bound to
/// dir/rank<R>.endpoint (whole, by a rename) and waits for the other's.
std::string meet_in(const std::filesystem::path& dir, std::size_t rank, std::size_t r, const std::string& bound) {
  namespace fs = std::filesystem;
  const auto mine = dir / ("rank" + std::to_string(rank) + ".endpoint");
  if (!fs::exists(mine)) {
    std::ofstream{fs::path{mine} += ".new"} << bound << '\n';
    fs::rename(fs::path{mine} += ".new", mine);
  }
  const auto theirs = dir / ("rank" + std::to_string(r) + ".endpoint");
  for (int tries = 0; tries < 2000; ++tries) {  // 20 s
    std::string endpoint;
    if (std::ifstream in{theirs}; in >> endpoint) return endpoint;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  throw std::runtime_error{"rank " + std::to_string(r) + " wrote no " + theirs.string() + " within 20 s"};
}
// [/split_meet]

int main(int argc, char** argv) {
  try {
    if (argc == 3) {  // one rank of a run by hand: split_pipeline RANK DIR
      const std::size_t rank = std::stoul(argv[1]);
      const std::filesystem::path dir = argv[2];
      if (rank > 1) throw std::runtime_error{"the rank is 0 or 1, not " + std::to_string(rank)};
      auto file = [&](std::size_t r, const char* ext) { return (dir / ("rank" + std::to_string(r) + ext)).string(); };
      rank_keys keys{net::load_key_pair(file(rank, ".key")), {}};
      for (std::size_t r = 0; r < 2; ++r)
        keys.public_keys.push_back(r == rank ? keys.mine.public_key : net::load_public_key(file(r, ".pub")));
      return run_rank(rank, keys,
                      [&](std::size_t r, const std::string& bound) { return meet_in(dir, rank, r, bound); });
    }
    if (argc != 1) throw std::runtime_error{"usage: split_pipeline [RANK DIR]"};
    // Both ranks here: keys made now, endpoints passed through promises.
    const net::key_pair k0 = net::generate_key_pair(), k1 = net::generate_key_pair();
    const std::vector<std::string> public_keys{k0.public_key, k1.public_key};
    std::promise<std::string> ep0, ep1;
    auto f0 = ep0.get_future(), f1 = ep1.get_future();
    auto swap = [](std::promise<std::string>& mine, std::future<std::string>& theirs) {
      return [&](std::size_t, const std::string& bound) {
        mine.set_value(bound);
        if (theirs.wait_for(std::chrono::seconds{20}) != std::future_status::ready)
          throw std::runtime_error{"the other rank bound no port within 20 s"};
        return theirs.get();
      };
    };
    auto rank1 = std::async(std::launch::async, [&] { return run_rank(1, {k1, public_keys}, swap(ep1, f0)); });
    const int rc = run_rank(0, {k0, public_keys}, swap(ep0, f1));
    return rc | rank1.get();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "split_pipeline: %s\n", e.what());
    return 2;
  }
}
