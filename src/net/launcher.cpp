// The launchers' environment variables, and the address lists of a cluster.
#include "troupe/net/launcher.hpp"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <system_error>
#include <utility>

namespace troupe::net {
namespace {

struct known_launcher {
  launcher which;
  const char* rank;
  const char* size;
};

// The order says who wins when several are set: mpirun inside a Slurm job
// inherits SLURM_PROCID from the job, so the MPI launchers come first.
constexpr known_launcher launchers[] = {
    {launcher::open_mpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {launcher::pmi, "PMI_RANK", "PMI_SIZE"},
    {launcher::slurm, "SLURM_PROCID", "SLURM_NTASKS"},
};

/// The variable's value, or nullptr when it is unset or empty.
const char* variable(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

std::size_t whole(const char* name, const std::string& text, const char* what) {
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc{} || p != end || v > std::numeric_limits<std::size_t>::max())
    throw net_error(std::string{"troupe::net: "} + name + "='" + text + "' is not a whole number (" + what + ")");
  return static_cast<std::size_t>(v);
}

void check_keys(const std::vector<std::string>& public_keys, std::size_t ranks) {
  if (!public_keys.empty() && public_keys.size() != ranks)
    throw net_error("troupe::net: " + std::to_string(public_keys.size()) + " public keys for " + std::to_string(ranks) +
                    " ranks (give one per rank, or none for plaintext)");
}

std::string trimmed(const std::string& s) {
  const auto from = s.find_first_not_of(" \t");
  if (from == std::string::npos) return {};
  return s.substr(from, s.find_last_not_of(" \t") - from + 1);
}

/// Throws net_error unless `ep` is tcp://HOST:PORT (PORT 0-65535 or *).
void check_endpoint(const std::string& ep) {
  const auto bad = [&ep](const std::string& why) {
    return net_error("troupe::net: '" + ep + "' is not an endpoint like tcp://127.0.0.1:7000 (" + why + ")");
  };
  const std::string scheme = "tcp://";
  if (ep.rfind(scheme, 0) != 0) throw bad("it does not start with tcp://");
  const auto colon = ep.rfind(':');
  if (colon == std::string::npos || colon < scheme.size()) throw bad("no :PORT");
  const std::string host = ep.substr(scheme.size(), colon - scheme.size());
  const std::string port = ep.substr(colon + 1);
  if (host.empty()) throw bad("no host");
  if (host.find(':') != std::string::npos && (host.front() != '[' || host.back() != ']'))
    throw bad("an IPv6 host goes in brackets: tcp://[::1]:7000");
  if (port == "*") return;
  unsigned v = 0;
  auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  if (port.empty() || ec != std::errc{} || p != port.data() + port.size() || v > 65535)
    throw bad("the port is not a number from 0 to 65535");
}

}  // namespace

const char* to_string(launcher l) noexcept {
  switch (l) {
    case launcher::open_mpi:
      return "Open MPI";
    case launcher::pmi:
      return "PMI";
    case launcher::slurm:
      return "Slurm";
  }
  return "?";
}

std::optional<launch_info> from_launcher() {
  for (const auto& k : launchers) {
    const char* rank = variable(k.rank);
    if (rank == nullptr) continue;
    launch_info info;
    info.launcher = k.which;
    info.rank_variable = k.rank;
    info.size_variable = k.size;
    const std::string who = std::string{to_string(k.which)} + "'s ";
    info.rank = whole(k.rank, rank, (who + "rank").c_str());
    if (const char* size = variable(k.size)) {
      info.size = whole(k.size, size, (who + "number of processes").c_str());
      if (*info.size == 0)
        throw net_error(std::string{"troupe::net: "} + k.size + "='" + size + "': a launcher starts 1 process or more");
      if (info.rank >= *info.size)
        throw net_error(std::string{"troupe::net: "} + k.rank + "='" + rank + "' is not below " + k.size + "='" + size +
                        "'");
    }
    return info;
  }
  return std::nullopt;
}

std::vector<remote_address> peers_from_list(const std::string& endpoints, const std::vector<std::string>& public_keys) {
  std::vector<remote_address> peers;
  std::size_t from = 0;
  for (;;) {
    const auto to = endpoints.find(',', from);
    std::string ep = trimmed(endpoints.substr(from, to == std::string::npos ? std::string::npos : to - from));
    if (ep.empty())
      throw net_error("troupe::net: an empty endpoint in the list '" + endpoints + "' (endpoints separated by ',')");
    check_endpoint(ep);
    peers.push_back({std::move(ep), {}});
    if (to == std::string::npos) break;
    from = to + 1;
  }
  check_keys(public_keys, peers.size());
  for (std::size_t r = 0; r < public_keys.size(); ++r) peers[r].public_key = public_keys[r];
  return peers;
}

std::vector<remote_address> peers_from_base_port(const std::string& host, std::uint16_t base_port, std::size_t size,
                                                 const std::vector<std::string>& public_keys) {
  if (size == 0) throw net_error("troupe::net: a cluster of 0 ranks (host " + host + ")");
  if (base_port == 0) throw net_error("troupe::net: base port 0: the other ranks cannot know a port picked at random");
  if (size - 1 > std::size_t{65535} - base_port)
    throw net_error("troupe::net: base port " + std::to_string(base_port) + " + " + std::to_string(size) +
                    " ranks passes port 65535");
  check_keys(public_keys, size);
  // An IPv6 address goes in brackets in an endpoint.
  const std::string h = host.find(':') != std::string::npos && host.front() != '[' ? "[" + host + "]" : host;
  std::vector<remote_address> peers;
  for (std::size_t r = 0; r < size; ++r) {
    std::string ep = "tcp://" + h + ":" + std::to_string(base_port + r);
    check_endpoint(ep);
    peers.push_back({std::move(ep), public_keys.empty() ? std::string{} : public_keys[r]});
  }
  return peers;
}

cluster_config cluster_from_launcher(std::vector<remote_address> peers) {
  const auto me = from_launcher();
  if (!me)
    throw net_error(
        "troupe::net: no launcher's rank in the environment (OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID)");
  if (me->size && *me->size != peers.size())
    throw net_error("troupe::net: " + std::string{to_string(me->launcher)} + " started " + std::to_string(*me->size) +
                    " processes (" + me->size_variable + ") but " + std::to_string(peers.size()) +
                    " addresses are given");
  if (me->rank >= peers.size())
    throw net_error("troupe::net: " + me->rank_variable + "=" + std::to_string(me->rank) + " but " +
                    std::to_string(peers.size()) + " addresses are given");
  cluster_config cfg;
  cfg.rank = me->rank;
  cfg.peers = std::move(peers);
  return cfg;
}

}  // namespace troupe::net
