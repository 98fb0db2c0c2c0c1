// split.hpp: one stream graph, run across several processes on the one engine.
//   auto graph = troupe::pipeline{
//       source{},
//       troupe::placed{troupe::farm{parse{}, 4}, troupe::placement::ranks("0,1")},
//       troupe::placed{troupe::farm{count{}, 4, troupe::by_key{&rec::key}}, troupe::placement::ranks("1")},
//       troupe::placed{sink{}, troupe::placement::rank(1)}};
//   net::cluster cl{sys, node, {.rank = rank, .peers = peers}};
//   auto g = net::split(cl, graph);      // a stream::graph: wait, error, done, cancel, metrics
//   g.wait();
// Every process builds the same description and calls split with the same
// name: each runs the replicas that their placement gives its rank (replica
// i of a farm on the i-th rank of its list, cycling; a part with no rank
// placement runs on rank 0), and the same graph handle as spawn_pattern
// gives, for its part. Neighbours on the same rank talk through the core's
// SPSC channels; where a channel would cross ranks, an edge runner sends the
// elements in batches with credit, and another receives them into a
// channel of its own (troupe/detail/edge.hpp): nothing has a thread of its
// own, and everything a graph does in one process it does split:
// routing policies (by key: one key reaches one replica across processes),
// send_all, broadcast, branches, ordered farms whose replicas span ranks,
// watermarks and event-time windows, on_error (a lost peer ends the graph
// with an error naming it, under skip too), cancel, metrics per replica.
// The per-stage form takes the ranks of each top-level stage as text:
//   auto g = net::split(cl, troupe::pipeline{source{}, troupe::farm{parse{}, 4}, sink{}},
//                       net::stage_ranks("0;0,1;1"));
// Rules: the graph runs from sources to sinks; farms have explicit replica
// counts (the same on every process); every rank runs the same description
// with the same options. Element types cross as message values do
// (codec.hpp): name user types with net::add_type<T>("name") on every
// process first.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/net/channel.hpp"
#include "troupe/troupe.hpp"

namespace troupe::net {

/// How a split graph runs.
struct split_options {
  std::string name = "graph";  ///< prefix of its inlets' names (distinct per graph of a cluster)
  edge_config edges{};
  stream::options stream{};  ///< as for spawn_pattern, on every rank
};

/// The ranks of each top-level stage, from text: stages separated by ';',
/// each a comma list of ranks ("0;0,1;1"). Throws std::invalid_argument
/// naming the bad part.
std::vector<troupe::placement> stage_ranks(const std::string& text);

namespace detail {

template <class... Ss, std::size_t... I>
auto place_stages(const pipeline<Ss...>& p, const std::vector<troupe::placement>& where, std::index_sequence<I...>) {
  return pipeline{placed{p.template stage<I>(), where[std::min(I, where.size() - 1)]}...};
}

}  // namespace detail

/// Runs this process's part of `p` (see the top of this header). Throws
/// std::invalid_argument for a placement that does not fit (a rank outside
/// the cluster), and net_error when a peer's inlet cannot be found within
/// the cluster's connect_timeout.
template <class P>
stream::graph split(cluster& cl, const P& p, const split_options& o = {}) {
  ext::for_each_element_type<P>([]<class T>() { detail::register_edge_type<T>(); });
  return ext::spawn_split(cl.system(), p, cl, o.name, o.edges, o.stream);
}

/// The same, with the ranks of each top-level stage of the pipeline given
/// apart (stage_ranks; stages beyond the list take the last one's).
template <class... Ss>
stream::graph split(cluster& cl, const pipeline<Ss...>& p, const std::vector<troupe::placement>& stages,
                    const split_options& o = {}) {
  if (stages.empty()) throw std::invalid_argument("troupe::net::split: no stage placement given");
  if (stages.size() > sizeof...(Ss))
    throw std::invalid_argument("troupe::net::split: " + std::to_string(stages.size()) +
                                " stage placements for a pipeline of " + std::to_string(sizeof...(Ss)) + " stages");
  return split(cl, detail::place_stages(p, stages, std::index_sequence_for<Ss...>{}), o);
}

}  // namespace troupe::net
