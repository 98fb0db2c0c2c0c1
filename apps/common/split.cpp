#include "split.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>

#if TROUPE_APPS_NET
#include <troupe/net/launcher.hpp>
#endif

namespace troupe_apps {

std::vector<app_flag> split_flags() {
  return {
      {"peers", "", "EP,EP,...",
       "run split across processes: where each rank listens, in rank order (tcp://HOST:PORT,...)"},
      {"rank", "", "R",
       "this process's rank; without it, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID from the environment"},
      {"placement", "0", "P",
       "which rank runs each replica of each operator: operators separated by ';', replica ranks by ',' "
       "(\"0;0;1;1\")"},
      {"keys", "", "DIR", "CURVE keys of a split run: DIR/rank<R>.key, and DIR/rank<i>.pub of every other rank"},
      {"security", "curve", "MODE", "a split run's transport: curve (encrypted, authenticated) or plaintext"},
      {"peer-timeout", "5000", "MS",
       "a split run's peer silent this many milliseconds is lost (heartbeats every sixth of it)"},
  };
}

#if TROUPE_APPS_NET

namespace {

std::vector<std::string> comma_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    const auto to = s.find(',', from);
    out.push_back(s.substr(from, to == std::string::npos ? std::string::npos : to - from));
    if (to == std::string::npos) return out;
    from = to + 1;
  }
}

/// --rank, else the launcher's (troupe::net::from_launcher: mpirun's
/// OMPI_COMM_WORLD_RANK or PMI_RANK, Slurm's SLURM_PROCID); a launcher that
/// started another number of processes than --peers lists is an error.
std::size_t rank_of(const cli& c, std::size_t ranks) {
  const std::string given = c.extra.at("rank");
  if (!given.empty()) return static_cast<std::size_t>(parse_whole("--rank", given, 0, ranks - 1));
  std::optional<troupe::net::launch_info> launched;
  try {
    launched = troupe::net::from_launcher();
  } catch (const troupe::net::net_error& e) {
    std::string why = e.what();
    if (why.rfind("troupe::net: ", 0) == 0) why.erase(0, 13);
    throw usage_error("--rank: " + why);
  }
  if (!launched)
    throw usage_error("--peers: give --rank (or run under mpirun or srun, which set the rank in the environment)");
  if (launched->size && *launched->size != ranks)
    throw usage_error("--peers: lists " + std::to_string(ranks) + " ranks but " +
                      troupe::net::to_string(launched->launcher) + " started " + std::to_string(*launched->size) +
                      " processes (" + launched->size_variable + ")");
  return static_cast<std::size_t>(
      parse_whole("--rank (from " + launched->rank_variable + ")", std::to_string(launched->rank), 0, ranks - 1));
}

}  // namespace

split_setup parse_split(const cli& c, const std::string& app) {
  split_setup s;
  const auto peers = comma_list(c.extra.at("peers"));
  if (peers.size() < 2) throw usage_error("--peers: a split run needs two endpoints or more (one per rank)");
  for (const auto& p : peers)
    if (p.rfind("tcp://", 0) != 0 || p.find(':', 6) == std::string::npos)
      throw usage_error("--peers: '" + p + "' is not an endpoint like tcp://127.0.0.1:7000");
  s.rank = rank_of(c, peers.size());
  try {
    s.stages = troupe::net::stage_ranks(c.extra.at("placement"));
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string{"--placement: "} + e.what());
  }
  s.placement_text = c.extra.at("placement");
  for (const auto& st : s.stages)
    for (auto r : st.rank_list())
      if (r >= peers.size())
        throw usage_error("--placement: names rank " + std::to_string(r) + " but --peers lists " +
                          std::to_string(peers.size()) + " ranks");
  s.node.name = app + " rank " + std::to_string(s.rank);
  // A batch job on a loaded machine: the library's loopback-tuned 600 ms
  // lost live peers under load (a peer's I/O thread starved for 0.6 s).
  const auto timeout = parse_whole("--peer-timeout", c.extra.at("peer-timeout"), 60, 3'600'000);
  s.node.heartbeat_timeout = std::chrono::milliseconds{timeout};
  s.node.heartbeat_interval = std::chrono::milliseconds{timeout / 6};
  const std::string security = c.extra.at("security");
  std::vector<std::string> public_keys(peers.size());
  if (security == "plaintext") {
    s.node.security = troupe::net::security::plaintext;
  } else if (security == "curve") {
    const std::string dir = c.extra.at("keys");
    if (dir.empty())
      throw usage_error("--keys: a split run is encrypted: give the keys' directory (or --security plaintext)");
    const auto file = [&](std::size_t r, const char* ext) {
      return (std::filesystem::path{dir} / ("rank" + std::to_string(r) + ext)).string();
    };
    try {
      s.node.keys = troupe::net::load_key_pair(file(s.rank, ".key"));
      for (std::size_t r = 0; r < peers.size(); ++r) {
        public_keys[r] = r == s.rank ? s.node.keys.public_key : troupe::net::load_public_key(file(r, ".pub"));
        if (r != s.rank) s.node.trusted_keys.push_back(public_keys[r]);
      }
    } catch (const troupe::net::net_error& e) {
      throw usage_error(std::string{"--keys: "} + e.what());
    }
  } else {
    throw usage_error("--security: '" + security + "' is neither curve nor plaintext");
  }
  s.cluster.rank = s.rank;
  for (std::size_t r = 0; r < peers.size(); ++r) s.cluster.peers.push_back({peers[r], public_keys[r]});
  return s;
}

#endif

}  // namespace troupe_apps
