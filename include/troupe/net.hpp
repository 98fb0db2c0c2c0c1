// net.hpp: the troupe::net module in one include: remote actors over ZeroMQ
// with CURVE security (node.hpp), the message codec (codec.hpp), typed
// streams between processes (channel.hpp), stream graphs split across
// processes (split.hpp) and what a launcher tells each process (launcher.hpp).
//   troupe::net::node net{sys, troupe::net::node_config{.keys = troupe::net::generate_key_pair()}};
// Link troupe::net (find_package(troupe REQUIRED COMPONENTS net)); it needs
// ZeroMQ, cppzmq and cereal. See docs/net.md.
#pragma once

#include "troupe/net/channel.hpp"
#include "troupe/net/codec.hpp"
#include "troupe/net/launcher.hpp"
#include "troupe/net/node.hpp"
#include "troupe/net/split.hpp"
