// pipeline3, troupe with fused nodes (troupe::chain): the forwarder chained
// to the source (`troupe_chain`, one channel), or all three nodes in one
// chain (`troupe_fused`, no channel). A file of its own: the compiler's
// inlining budget is per file, and these graphs in troupe.cpp changed how the
// three-stage graph there was compiled.
#include "impls.hpp"

#include "run_stream.hpp"

namespace {
using bench::stream_tuple::forwarder;
using bench::stream_tuple::sink;
using bench::stream_tuple::source;
}  // namespace

bench::sample bench::run_troupe_chain(const params& p) {
  return pipeline3::run_stream(
      p, [](source& src, sink& snk) { return troupe::pipeline{troupe::chain{src, forwarder{}}, snk}; });
}
bench::sample bench::run_troupe_fused(const params& p) {
  return pipeline3::run_stream(p, [](source& src, sink& snk) { return troupe::chain{src, forwarder{}, snk}; });
}
