// metrics.hpp: the troupe::metrics module in one include: live metrics of
// the actor system and of watched graphs over HTTP, as Prometheus text and
// a dashboard (exporter.hpp).
//   troupe::metrics::exporter ex{sys, {.port = 9464}};   // serves until destroyed
// Link troupe::metrics (find_package(troupe REQUIRED COMPONENTS metrics)); it
// needs cpp-httplib. See docs/observability.md.
#pragma once

#include "troupe/metrics/exporter.hpp"
