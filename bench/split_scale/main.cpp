// split_scale: a by-key farm whose replicas span 2, 4 and 8 processes on
// this machine (loopback, oversubscribed: 2 cores here), on the one engine
// (troupe::net::split). Every process builds the same description:
//   source (rank 0) -> farm of N counters by key, replica r on rank r -> sink (rank 0)
// Each counter counts its keys and emits one (key, count) pair per key at the
// end of the stream; the sink checks that every key was counted exactly
// tuples / keys times, in one replica only.
//
// params:
//   ranks    processes (and counter replicas): 2, 4, 8
//   tuples   elements the source emits (quick 2 M, full 5 M)
//   keys     distinct keys (1024)
// impls:
//   one_process  the same description in one process, 2 workers (the farm's N
//                replicas share them)
//   split        N processes: rank 0 this one (source, counter 0, sink),
//                ranks 1..N-1 forked server processes (common/peer_process.hpp),
//                plaintext TCP on 127.0.0.1, 1 worker each
// Measured region: on rank 0, from split() until its part has ended (every
// count reached the sink, every element it sent is acknowledged).
// Figure: tuples/s. Extras: peak RSS of every rank (rss_rank<r>_mib) and the
// largest (rss_max_mib), in MiB (VmHWM, read by each process at its end).
// Check: the counts are exact; every server process exits cleanly.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <troupe/net/split.hpp>

#include "child_process.hpp"
#include "common/harness.hpp"
#include "common/peer_process.hpp"

namespace {

namespace st = troupe::stream;
namespace net = troupe::net;

struct key_count {
  std::uint32_t key = 0;
  std::uint64_t count = 0;  // the source: 1; a counter's total at the end
  auto fields() { return std::tie(key, count); }
};

/// Counts per key; emits its totals at the end of the stream.
struct counter : st::node<key_count, key_count> {
  static constexpr const char* kind = "counter";
  std::unordered_map<std::uint32_t, std::uint64_t> per_key;
  void consume(key_count& k) { per_key[k.key] += k.count; }
  void on_stop() {
    for (auto& [key, n] : per_key) send_next(key_count{key, n});
  }
};

/// What the sink saw (rank 0 only).
struct totals {
  std::mutex m;
  std::unordered_map<std::uint32_t, std::uint64_t> per_key;
  std::uint64_t pairs = 0;
};

auto description(std::int64_t tuples, std::int64_t keys, std::size_t ranks, const std::shared_ptr<totals>& t) {
  auto source = st::source([i = std::int64_t{0}, tuples, keys]() mutable -> std::optional<key_count> {
    if (i == tuples) return std::nullopt;
    const auto k = static_cast<std::uint32_t>(i++ % keys);
    return key_count{k, 1};
  });
  auto sink = st::sink([t](const key_count& k) {
    std::lock_guard<std::mutex> g{t->m};
    t->per_key[k.key] += k.count;
    ++t->pairs;
  });
  std::vector<std::size_t> all(ranks);
  for (std::size_t r = 0; r < ranks; ++r) all[r] = r;
  return troupe::pipeline{
      source,
      troupe::placed{troupe::farm{counter{}, ranks, troupe::by_key{[](const key_count& k) { return k.key; }}},
                     troupe::placement::ranks(all)},
      sink};
}

void check(const totals& t, std::int64_t tuples, std::int64_t keys) {
  if (t.per_key.size() != static_cast<std::size_t>(keys))
    throw std::runtime_error(std::to_string(t.per_key.size()) + " keys counted, not " + std::to_string(keys));
  if (t.pairs != static_cast<std::uint64_t>(keys))
    throw std::runtime_error("a key was counted by several replicas (" + std::to_string(t.pairs) + " totals)");
  for (auto& [k, n] : t.per_key)
    if (n != static_cast<std::uint64_t>(tuples / keys + (k < tuples % keys ? 1 : 0)))
      throw std::runtime_error("key " + std::to_string(k) + " counted " + std::to_string(n) + " times");
}

double peak_rss_mib() {
  std::ifstream f{"/proc/self/status"};
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

net::node_config plain(std::size_t rank) {
  net::node_config c;
  c.security = net::security::plaintext;
  c.name = "split_scale rank " + std::to_string(rank);
  return c;
}

void register_types() { net::add_type<key_count>("split_scale.key_count"); }

bench::sample run_one_process(const bench::params& p) {
  const auto tuples = p.get("tuples"), keys = p.get("keys");
  const auto ranks = static_cast<std::size_t>(p.get("ranks"));
  auto t = std::make_shared<totals>();
  troupe::actor_system sys{troupe::config{.workers = 2}};
  bench::stopwatch sw;
  troupe::spawn_pattern(sys, description(tuples, keys, ranks, t)).wait();
  bench::sample s;
  s.wall_s = sw.seconds();
  check(*t, tuples, keys);
  s.add("rss_max_mib", peak_rss_mib(), "MiB");
  return s;
}

bench::sample run_split(const bench::params& p) {
  const auto tuples = p.get("tuples"), keys = p.get("keys");
  const auto ranks = static_cast<std::size_t>(p.get("ranks"));
  const auto deadline = bench::peer::deadline_from_now(std::chrono::seconds{110});
  const std::string rank0 = "tcp://127.0.0.1:" + std::to_string(child_process::free_ports(1).at(0));
  const std::string rss_file = "/tmp/troupe_split_scale_" + std::to_string(::getpid()) + "_rank";
  // The servers first: fork() before this process starts a thread.
  std::vector<std::unique_ptr<bench::peer::server_process>> servers;
  for (std::size_t r = 1; r < ranks; ++r) {
    servers.push_back(std::make_unique<bench::peer::server_process>([&, r](const bench::peer::reporter& report) {
      register_types();
      troupe::actor_system sys{troupe::config{.workers = 1}};
      net::node node{sys, plain(r)};
      std::vector<net::remote_address> peers(ranks);
      peers[0] = {rank0, ""};
      peers[r] = {"tcp://127.0.0.1:*", ""};
      net::cluster cl{sys, node, {.rank = r, .peers = peers, .connect_timeout = std::chrono::seconds{60}}};
      const auto& ep = cl.self_address().endpoint;
      report.ports({std::stoi(ep.substr(ep.rfind(':') + 1))});
      net::split(cl, description(tuples, keys, ranks, nullptr), {.name = "scale"}).wait();
      std::ofstream{rss_file + std::to_string(r)} << peak_rss_mib() << '\n';
    }));
  }
  std::vector<net::remote_address> peers(ranks);
  peers[0] = {rank0, ""};
  for (std::size_t r = 1; r < ranks; ++r)
    peers[r] = {"tcp://127.0.0.1:" + std::to_string(servers[r - 1]->ports(deadline).at(0)), ""};
  register_types();
  auto t = std::make_shared<totals>();
  bench::sample s;
  {
    troupe::actor_system sys{troupe::config{.workers = 1}};
    net::node node{sys, plain(0)};
    net::cluster cl{sys, node, {.rank = 0, .peers = peers, .connect_timeout = std::chrono::seconds{60}}};
    bench::stopwatch sw;
    net::split(cl, description(tuples, keys, ranks, t), {.name = "scale"}).wait();
    s.wall_s = sw.seconds();
  }
  for (auto& srv : servers) srv->join(deadline);
  check(*t, tuples, keys);
  double most = peak_rss_mib();
  s.add("rss_rank0_mib", most, "MiB");
  for (std::size_t r = 1; r < ranks; ++r) {
    const auto path = rss_file + std::to_string(r);
    double mib = 0;
    std::ifstream{path} >> mib;
    std::remove(path.c_str());
    s.add("rss_rank" + std::to_string(r) + "_mib", mib, "MiB");
    most = std::max(most, mib);
  }
  s.add("rss_max_mib", most, "MiB");
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "split_scale";
  s.description = "a by-key farm across 2, 4 and 8 processes on loopback (one engine), exact counts, tuples/s";
  s.impls = {{"one_process", run_one_process}, {"split", run_split}};
  s.primary = bench::metric{"tuples_per_s", "tuples/s", true, [](const bench::sample& r, const bench::params& p) {
                              return r.wall_s > 0 ? static_cast<double>(p.get("tuples")) / r.wall_s : 0.0;
                            }};
  s.variants = [](bool full) {
    const std::int64_t tuples = full ? 5'000'000 : 2'000'000;
    std::vector<bench::variant> v;
    for (std::int64_t ranks : {2, 4, 8})
      v.push_back({std::to_string(ranks) + " ranks", {{"ranks", ranks}, {"tuples", tuples}, {"keys", 1024}}});
    return v;
  };
  s.default_runs = 3;
  s.timeout_s = 240;
  return bench::run_main(argc, argv, s);
}
