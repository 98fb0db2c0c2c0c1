// device_stage, troupe: source -> device_map -> sink, and source -> farm of
// CPU stages -> sink.
#include "impls.hpp"

#include <troupe/opencl/opencl.hpp>
#include <troupe/troupe.hpp>

#include <algorithm>

#include "common/opencl_support.hpp"
#include "common/stream_graph.hpp"

namespace ocl = troupe::opencl;

namespace {

using bench::device_stage::tally;

struct source : troupe::stream::node<void, float> {
  std::int64_t i = 0, n = 0;
  bool produce() {
    if (i == n) return false;
    send_next(bench::device_stage::input(i));
    ++i;
    return true;
  }
};

struct cpu_stage : troupe::stream::node<float, float> {
  void consume(float& x) { send_next(bench::device_stage::work(x)); }
};

struct sink : troupe::stream::node<float, void> {
  tally* t = nullptr;
  void consume(const float& y) {
    ++t->count;
    t->sum += y;
  }
};

/// Runs source -> stage -> sink over `n` elements on `sys` and checks what
/// the sink saw.
template <class Stage>
bench::sample run_graph(troupe::actor_system& sys, const Stage& stage, std::int64_t n) {
  tally t;
  source src;
  src.n = n;
  sink snk;
  snk.t = &t;
  auto s = bench::time_graph(sys, troupe::pipeline{src, stage, snk});
  bench::device_stage::check_tally(t, n);
  return s;
}

/// A short run of the same graph first (not measured): PoCL compiles the
/// kernel for a work-group size at its first launch with it, and the pool's
/// threads are up.
template <class Stage>
bench::sample run_measured(const bench::params& p, const Stage& stage) {
  const auto elements = p.get("elements"), batch = p.get("batch");
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  (void)run_graph(sys, stage, std::min(elements, 4 * batch + elements % batch));
  return run_graph(sys, stage, elements);
}

}  // namespace

bench::sample bench::run_troupe_opencl(const params& p) {
  const auto prog = ocl::program::build(opencl_support::device(), device_stage::kernel_source());
  return run_measured(p,
                      ocl::device_map<float, float>(prog, "work", {.size = static_cast<std::size_t>(p.get("batch"))}));
}

bench::sample bench::run_troupe_cpu_farm(const params& p) {
  return run_measured(p, troupe::farm{cpu_stage{}, static_cast<std::size_t>(p.get("replicas"))});
}
