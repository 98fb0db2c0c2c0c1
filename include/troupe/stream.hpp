// stream.hpp: typed streaming operators (nodes), bounded channels and
// stream graphs built from troupe::pipeline and troupe::farm.
// See docs/streaming.md.
#pragma once

#include "troupe/stream/graph.hpp"
#include "troupe/stream/metrics.hpp"
#include "troupe/stream/node.hpp"
#include "troupe/stream/window.hpp"
