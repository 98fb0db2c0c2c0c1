// pattern_request, troupe: the clients are event actors; the pattern is
// spawned with spawn_pattern and asked like any actor.
#include "impls.hpp"

#include <troupe/troupe.hpp>

#include <chrono>
#include <memory>

namespace {

using clock_type = std::chrono::steady_clock;
namespace pr = bench::pattern_request;

troupe::config with_workers(std::size_t workers) {
#if __has_include(<troupe/pattern/placed.hpp>)
  return troupe::config{.workers = workers};
#else  // the tree before the one-engine redesign (builder-style config)
  return troupe::config{}.workers(workers);
#endif
}

struct client_state {
  troupe::event_actor* self;
  troupe::actor pattern;
  std::int64_t first, stride, count, spin, window;
  std::int64_t sent = 0, answered = 0;
  std::vector<clock_type::time_point> stamps{};
  pr::client_report report{};
  troupe::actor main{};

  void ask_next() {
    const std::int64_t k = sent++;
    const std::int64_t x = first + k * stride;
    stamps[static_cast<std::size_t>(k)] = clock_type::now();
    self->request(pattern, troupe::infinite, x).then([this, k, x](std::int64_t r) {
      report.latencies_ns.push_back(
          std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - stamps[static_cast<std::size_t>(k)])
              .count());
      if (r != 3 * x) ++report.wrong;
      if (sent < count) ask_next();
      if (++answered == count) {
        self->send(main, std::move(report));
        self->quit();
      }
    });
  }
};

}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto clients = p.get("clients"), window = p.get("window"), spin = p.get("spin");
  troupe::actor_system sys{with_workers(static_cast<std::size_t>(p.get("workers")))};
  troupe::actor pattern = troupe::spawn_pattern(
      sys, troupe::pipeline{troupe::farm{troupe::seq{[spin](std::int64_t x) { return pr::first_stage(x, spin); }},
                                         static_cast<std::size_t>(p.get("replicas"))},
                            troupe::seq{[](std::int64_t y) { return pr::last_stage(y); }}});
  troupe::scoped_actor self{sys};
  auto main = self.handle();
  stopwatch sw;
  for (std::int64_t c = 0; c < clients; ++c) {
    const auto count = pr::share(p, c);
    sys.spawn([=](troupe::event_actor& s) {
      auto st = std::make_shared<client_state>(client_state{&s, pattern, c, clients, count, spin, window});
      st->stamps.resize(static_cast<std::size_t>(count));
      st->report.latencies_ns.reserve(static_cast<std::size_t>(count));
      st->main = main;
      for (std::int64_t i = 0; i < std::min(window, count); ++i) st->ask_next();
      return troupe::behavior{[st](int) {}};  // keeps the state alive until quit()
    });
  }
  std::vector<pr::client_report> reports;
  for (std::int64_t c = 0; c < clients; ++c)
    self->receive([&](pr::client_report& r) { reports.push_back(std::move(r)); });
  const double wall = sw.seconds();
  return pr::summarize(reports, wall, p);
}
