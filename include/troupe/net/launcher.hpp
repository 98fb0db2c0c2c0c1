// launcher.hpp: what a launcher (mpirun, srun) says about this process, and
// where the ranks of a split graph listen (the troupe::net module).
// A launcher starts the same program several times and tells each process
// its rank and the number of processes in environment variables; troupe
// reads them, and does not use MPI otherwise:
//   Open MPI's mpirun  OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE
//   PMI (MPICH, Intel MPI's mpiexec; srun --mpi=pmi2)  PMI_RANK, PMI_SIZE
//   Slurm's srun       SLURM_PROCID, SLURM_NTASKS
// (looked for in this order: the first launcher whose rank variable is set
// wins, so an mpirun inside a Slurm job is Open MPI's).
// The addresses are not the launcher's business: every rank is given the same
// list, either spelled out or as a host and a base port (rank r at base + r):
//   auto me = net::from_launcher();  // std::nullopt: not started by a launcher
//   net::cluster cl{sys, node, net::cluster_from_launcher(net::peers_from_list(
//       "tcp://a:7000,tcp://b:7000,tcp://c:7000,tcp://d:7000"))};
//   ...or, all ranks on one machine:
//   net::cluster cl{sys, node, net::cluster_from_launcher(net::peers_from_base_port("127.0.0.1", 7000, *me->size))};
// Costs nothing but a few getenv calls; call it once at start-up (getenv
// races with setenv in other threads). Errors are net_error naming the
// variable or endpoint and its value. See docs/net.md, "Under mpirun or srun".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "troupe/net/channel.hpp"
#include "troupe/net/node.hpp"

namespace troupe::net {

/// Which launcher started this process (by the variables it set).
enum class launcher {
  open_mpi,  ///< OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE
  pmi,       ///< PMI_RANK / PMI_SIZE
  slurm,     ///< SLURM_PROCID / SLURM_NTASKS
};

/// "Open MPI", "PMI" or "Slurm".
const char* to_string(launcher l) noexcept;

/// What a launcher said about this process.
struct launch_info {
  net::launcher launcher = launcher::open_mpi;
  std::size_t rank = 0;
  /// The number of processes it started; std::nullopt when it set the rank
  /// variable alone. When known, rank < *size.
  std::optional<std::size_t> size;
  std::string rank_variable;  ///< where the rank came from: "OMPI_COMM_WORLD_RANK"
  std::string size_variable;  ///< where the size came from ("OMPI_COMM_WORLD_SIZE"), or would have
};

/// This process's rank and size from the environment: the first of Open MPI,
/// PMI and Slurm whose rank variable is set (and not empty); std::nullopt when
/// none is. Throws net_error naming the variable and its value when a value
/// is not a whole number, a size is 0, or the rank is not below the size.
std::optional<launch_info> from_launcher();

/// The addresses of a cluster's ranks from one list, the same on every rank:
/// comma-separated endpoints "tcp://HOST:PORT" in rank order (spaces around
/// them are ignored; an IPv6 host in brackets). `public_keys`: empty
/// (plaintext), or one per endpoint (CURVE). Throws net_error naming a
/// malformed endpoint, an empty list, or keys that do not match.
std::vector<remote_address> peers_from_list(const std::string& endpoints,
                                            const std::vector<std::string>& public_keys = {});

/// The addresses of `size` ranks on one host: rank r listens at
/// tcp://host:(base_port + r). `public_keys` as for peers_from_list. Throws
/// net_error when size is 0, base_port is 0 (a port picked at random cannot
/// be known by the other ranks) or the last port passes 65535.
std::vector<remote_address> peers_from_base_port(const std::string& host, std::uint16_t base_port, std::size_t size,
                                                 const std::vector<std::string>& public_keys = {});

/// A cluster_config for this process: its rank from from_launcher(), the
/// given peers. Throws net_error when no launcher started it, when the
/// launcher started another number of processes than peers.size(), or when
/// its rank has no address.
cluster_config cluster_from_launcher(std::vector<remote_address> peers);

}  // namespace troupe::net
