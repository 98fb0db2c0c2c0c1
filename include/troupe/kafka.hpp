// kafka.hpp: troupe::kafka, Kafka connectors for stream graphs (optional
// module: CMake target troupe::kafka, built where Debian's librdkafka-dev is
// installed; scripts/setup installs it).
//   namespace kafka = troupe::kafka;
//   auto g = troupe::spawn_pattern(sys, troupe::pipeline{
//       troupe::farm{kafka::text_source({.client = {.brokers = "k1:9092"}, .topic = "lines", .group = "wc"}), 4},
//       troupe::farm{split{}, 2}, count{},
//       kafka::text_sink({.client = {.brokers = "k1:9092"}, .topic = "counts"})},
//       {.checkpoint = {.dir = "ckpt", .interval = std::chrono::seconds{1}}});
// With checkpoints, offsets are part of the state and the sink commits a
// transaction per checkpoint (see docs/connectors.md).
#pragma once

#include "troupe/kafka/client.hpp"
#include "troupe/kafka/sink.hpp"
#include "troupe/kafka/source.hpp"
