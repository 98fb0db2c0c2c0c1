// build.hpp: how a stream pattern becomes runners and channels (users need
// stream.hpp). A graph is built back to front: each stage is given what
// follows it (its replicas' ports and routing policy) and returns its own.
// Nodes become one runner each; farm, pipeline and dedicated (which have a
// build_stream member) arrange the nodes inside them.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/stream/runner.hpp"

namespace troupe::stream::detail {

struct builder {
  graph_state& graph;
  std::vector<std::unique_ptr<runner_base>>& runners;
  std::size_t capacity;          // slots per channel
  std::size_t default_replicas;  // a farm of 0 replicas: one per worker
  runner_settings settings;      // of the next runner (placement, replica index, ...)
  std::size_t threads = 0;       // dedicated threads so far in the current placement group
};

template <class P>
downstream<typename P::in_type> build_stage(builder& b, const P& p, const downstream<typename P::out_type>& next) {
  if constexpr (requires { p.build_stream(b, next); }) {
    return p.build_stream(b, next);
  } else {
    using In = typename P::in_type;
    using Out = typename P::out_type;
    auto s = b.settings;
    if (s.dedicated) s.thread_index = b.threads++;
    auto r = std::make_unique<runner<P>>(b.graph, p, s);
    if constexpr (!std::is_void_v<Out>) r->attach(next, b.capacity);
    downstream<In> d;
    if constexpr (!std::is_void_v<In>) d.ports.push_back(r.get());
    b.runners.push_back(std::move(r));
    return d;
  }
}

}  // namespace troupe::stream::detail
