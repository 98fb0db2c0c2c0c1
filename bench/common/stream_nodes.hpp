// stream_nodes.hpp: troupe stream nodes over stream_tuple::tuple: a source of
// `n` tuples (value i, key i % 1024), a forwarder and a tallying sink.
#pragma once

#include <troupe/troupe.hpp>

#include "common/stream_tuple.hpp"

namespace bench::stream_tuple {

struct source : troupe::stream::node<void, tuple> {
  std::int64_t i = 0, n = 0;
  bool produce() {
    if (i == n) return false;
    send_next(tuple{i % 1024, i, i});
    ++i;
    return true;
  }
};
struct forwarder : troupe::stream::node<tuple, tuple> {
  void consume(tuple& x) { send_next(std::move(x)); }
};
struct sink : troupe::stream::node<tuple, void> {
  tally* t = nullptr;
  void consume(const tuple& x) { t->add(x); }
};

}  // namespace bench::stream_tuple
