// memory_at_max_rate, troupe: a two-node stream graph on the pool; the
// channel's 1024 slots bound what waits for the slow sink.
#include "impls.hpp"

#include <troupe/troupe.hpp>

namespace {

using bench::memory_at_max_rate::tuple;

// What the source reports when it has stopped.
struct source_report {
  std::int64_t sent = 0;
  double seconds = 0;
};

struct source : troupe::stream::node<void, tuple> {
  std::int64_t i = 0;
  double seconds = 0;
  std::chrono::steady_clock::time_point t0;
  source_report* report = nullptr;
  bool produce() {
    if ((i & 1023) == 0) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (elapsed >= seconds) {
        report->sent = i;
        report->seconds = elapsed;
        return false;
      }
    }
    send_next(tuple{i % 1024, i, i});
    ++i;
    return true;
  }
};

struct sink : troupe::stream::node<tuple, void> {
  std::int64_t spin = 0;
  bench::memory_at_max_rate::tally* t = nullptr;
  void consume(const tuple& x) { t->add(x, spin); }
};

}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto seconds = p.get("seconds");
  check(seconds > 5, "seconds must be more than 5 (RSS is sampled at 5 s)");
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  memory_at_max_rate::tally t;
  source_report rep;
  source src;
  src.seconds = static_cast<double>(seconds);
  src.report = &rep;
  sink snk;
  snk.spin = p.get("sink_spin");
  snk.t = &t;
  troupe::stream::options o;
  o.capacity = 1024;
  o.placement = troupe::placement::pool();
  stopwatch sw;
  src.t0 = std::chrono::steady_clock::now();
  memory_at_max_rate::rss_sampler rss{static_cast<double>(seconds)};
  auto g = troupe::spawn_pattern(sys, troupe::pipeline{src, snk}, o);
  g.wait();
  sample s;
  s.wall_s = sw.seconds();
  rss.stop();
  t.check(rep.sent);
  rss.report(s);
  s.add("sink_tuples", static_cast<double>(t.count), "tuples", true);
  s.add("source_s", rep.seconds, "s");
  s.add("capped", 0, "");
  return s;
}
