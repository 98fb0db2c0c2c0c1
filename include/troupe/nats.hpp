// nats.hpp: troupe::nats, NATS JetStream connectors for stream graphs
// (optional module: CMake target troupe::nats, built where Debian's
// libnats-dev is installed; scripts/setup installs it and nats-server).
//   namespace nats = troupe::nats;
//   auto g = troupe::spawn_pattern(sys, troupe::pipeline{
//       nats::text_source({.stream = "LINES", .durable = "wc"}), troupe::farm{split{}, 2}, count{},
//       nats::text_sink({.subject = "counts"})},
//       {.checkpoint = {.dir = "ckpt", .interval = std::chrono::seconds{1}}});
// With checkpoints, every message of the stream reaches the output stream
// once, through crashes of the program and restarts of the server (see
// docs/connectors.md).
#pragma once

#include "troupe/nats/client.hpp"
#include "troupe/nats/sink.hpp"
#include "troupe/nats/source.hpp"
