// stream.hpp: the typed streaming engine: nodes, routing policies, graph
// handles, options, windows and metrics. Patterns (pipeline, farm, ...) and
// spawn_pattern, which arrange nodes into graphs, are in troupe.hpp.
// See docs/streaming.md.
#pragma once

#include "troupe/stream/chain.hpp"
#include "troupe/stream/checkpoint.hpp"
#include "troupe/stream/graph.hpp"
#include "troupe/stream/metrics.hpp"
#include "troupe/stream/node.hpp"
#include "troupe/stream/options.hpp"
#include "troupe/stream/routing.hpp"
#include "troupe/stream/state.hpp"
#include "troupe/stream/window.hpp"
