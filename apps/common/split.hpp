// split.hpp: running an application's graph split across processes
// (troupe::net::split), chosen by flags; the same graph as the one-process run.
//   troupe-wc --passes 1 --parallelism 1,2,2,1 --placement "0;0;1;1" --keys keys/
//             --peers tcp://127.0.0.1:7000,tcp://127.0.0.1:7001 --rank 0     (and one with --rank 1)
//   --peers EP,EP,...   where each rank listens, in rank order (this process binds its own)
//   --rank R            this process's rank (default: OMPI_COMM_WORLD_RANK, PMI_RANK or
//                       SLURM_PROCID from the environment, for mpirun and srun)
//   --placement P       which rank runs each replica of each operator ("0;0;1;1",
//                       "0;0;0,1;1": net::stage_ranks in troupe/net/split.hpp); default:
//                       everything on rank 0
//   --keys DIR          CURVE keys: DIR/rank<R>.key for this rank, DIR/rank<i>.pub for the others
//                       (troupe-keygen DIR/rank0 ...); --security plaintext goes without
//   --peer-timeout MS   a peer silent this long is lost (default 5000)
// Each process reports what it ran: the sources' tuples on the ranks that run
// sources, the sinks' tuples and latency on the ranks that run sinks.
// Without --peers the graph runs in this process alone.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "cli.hpp"

#if TROUPE_APPS_NET
#include <troupe/net/split.hpp>
#endif

namespace troupe_apps {

/// The flags of a split run (for main_of's extra flags).
std::vector<app_flag> split_flags();

/// Whether the flags ask for a split run (--peers given).
inline bool split_requested(const cli& c) {
  auto it = c.extra.find("peers");
  return it != c.extra.end() && !it->second.empty();
}

/// Names the element types of a graph for the network (a no-op without
/// troupe::net): net::add_type<T>(prefix + "." + name), once per type.
template <class T>
void name_for_network([[maybe_unused]] const std::string& name) {
#if TROUPE_APPS_NET
  static const bool once = [&] {
    troupe::net::add_type<T>(name);
    return true;
  }();
  (void)once;
#endif
}

#if TROUPE_APPS_NET
/// What the split flags say, checked (usage_error naming the flag).
struct split_setup {
  std::size_t rank = 0;
  troupe::net::cluster_config cluster;
  troupe::net::node_config node;
  std::vector<troupe::placement> stages{troupe::placement::rank(0)};  ///< per operator (--placement)
  std::string placement_text = "0";
};
split_setup parse_split(const cli& c, const std::string& app);
#endif

}  // namespace troupe_apps
