// pattern_request, CAF 0.17: front -> (round robin) worker_i -> last, each
// forwarding the client's request with delegate(); the last stage's return
// value answers the client.
#include "impls.hpp"

#include <chrono>
#include <memory>

#include "common/caf_support.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(bench::pattern_request::client_report)

namespace {

using clock_type = std::chrono::steady_clock;
namespace pr = bench::pattern_request;

caf::behavior last_stage_actor() {
  return {[](std::int64_t y) { return pr::last_stage(y); }};
}

caf::behavior worker_actor(caf::event_based_actor* self, caf::actor last, std::int64_t spin) {
  return {[=](std::int64_t x) { return self->delegate(last, pr::first_stage(x, spin)); }};
}

caf::behavior front_actor(caf::event_based_actor* self, std::vector<caf::actor> workers) {
  auto next = std::make_shared<std::size_t>(0);
  return {[=](std::int64_t x) {
    auto& w = workers[(*next)++ % workers.size()];
    return self->delegate(w, x);
  }};
}

struct client_state {
  std::int64_t first = 0, stride = 1, count = 0, window = 1;
  std::int64_t sent = 0, answered = 0;
  std::vector<clock_type::time_point> stamps;
  pr::client_report report;
};

void ask_next(caf::stateful_actor<client_state>* self, caf::actor front, caf::actor main) {
  auto& st = self->state;
  const std::int64_t k = st.sent++;
  const std::int64_t x = st.first + k * st.stride;
  st.stamps[static_cast<std::size_t>(k)] = clock_type::now();
  self->request(front, caf::infinite, x).then([=](std::int64_t r) {
    auto& s = self->state;
    s.report.latencies_ns.push_back(
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - s.stamps[static_cast<std::size_t>(k)])
            .count());
    if (r != 3 * x) ++s.report.wrong;
    if (s.sent < s.count) ask_next(self, front, main);
    if (++s.answered == s.count) {
      self->send(main, std::move(s.report));
      self->quit();
    }
  });
}

caf::behavior client_actor(caf::stateful_actor<client_state>* self, caf::actor front, caf::actor main,
                           std::int64_t first, std::int64_t stride, std::int64_t count, std::int64_t window) {
  auto& st = self->state;
  st.first = first;
  st.stride = stride;
  st.count = count;
  st.stamps.resize(static_cast<std::size_t>(count));
  st.report.latencies_ns.reserve(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < std::min(window, count); ++i) ask_next(self, front, main);
  return {[](int) {}};
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto clients = p.get("clients"), window = p.get("window"), spin = p.get("spin");
  const auto workers = p.get("workers");
  caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  auto last = sys.spawn(last_stage_actor);
  std::vector<caf::actor> stage;
  for (std::int64_t i = 0; i < p.get("replicas"); ++i) stage.push_back(sys.spawn(worker_actor, last, spin));
  auto front = sys.spawn(front_actor, stage);
  caf::scoped_actor self{sys};
  stopwatch sw;
  for (std::int64_t c = 0; c < clients; ++c)
    sys.spawn(client_actor, front, caf::actor{self}, c, clients, pr::share(p, c), window);
  std::vector<pr::client_report> reports;
  for (std::int64_t c = 0; c < clients; ++c)
    self->receive([&](pr::client_report& r) { reports.push_back(std::move(r)); });
  const double wall = sw.seconds();
  for (auto& a : stage) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(front, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(last, caf::exit_reason::user_shutdown);
  return pr::summarize(reports, wall, p);
}
