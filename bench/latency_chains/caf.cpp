// latency_chains, CAF 0.17: chains of event-based actors, sequential heavy actor.
#include "impls.hpp"

#include <chrono>
#include <numeric>
#include <thread>

#include "common/caf_support.hpp"

namespace {

using token_atom = caf::atom_constant<caf::atom("token")>;
using outcome_atom = caf::atom_constant<caf::atom("outcome")>;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

caf::behavior forwarder(caf::event_based_actor* self, caf::actor to) {
  return {[=](token_atom, std::int64_t seq, std::int64_t stamp, double result) {
    self->send(to, token_atom::value, seq, stamp, result);
  }};
}

caf::behavior heavy(caf::event_based_actor* self, caf::actor to, std::int64_t elements, std::int64_t spin) {
  return {[=](token_atom, std::int64_t seq, std::int64_t stamp, double) {
    auto data = bench::latency_chains::payload(seq, elements);
    for (auto& x : data) x = bench::synthetic_work(x, spin);
    self->send(to, token_atom::value, seq, stamp, std::accumulate(data.begin(), data.end(), 0.0));
  }};
}

caf::behavior tail(caf::event_based_actor* self, caf::actor main, std::int64_t elements, std::int64_t spin) {
  return {[=](token_atom, std::int64_t seq, std::int64_t stamp, double result) {
    auto latency = now_ns() - stamp;
    bool ok = seq % 50 != 0 || result == bench::latency_chains::heavy_sum(seq, elements, spin);
    self->send(main, outcome_atom::value, latency, ok);
  }};
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto chains = p.get("chains"), length = p.get("length"), heavy_pos = p.get("heavy");
  const auto rate = p.get("rate"), messages = p.get("messages");
  const auto elements = p.get("elements"), spin = p.get("spin"), workers = p.get("workers");
  caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  auto main = caf::actor_cast<caf::actor>(self);
  std::vector<caf::actor> heads;
  for (std::int64_t c = 0; c < chains; ++c) {
    caf::actor next = sys.spawn(tail, main, elements, spin);
    for (std::int64_t pos = length - 2; pos >= 0; --pos)
      next = pos == heavy_pos ? sys.spawn(heavy, next, elements, spin) : sys.spawn(forwarder, next);
    heads.push_back(next);
  }
  const auto period = std::chrono::nanoseconds{1'000'000'000 / rate};
  const auto t0 = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < messages; ++i) {
    std::this_thread::sleep_until(t0 + i * period);
    self->send(heads[static_cast<std::size_t>(i % chains)], token_atom::value, i, now_ns(), 0.0);
  }
  std::vector<std::int64_t> latencies;
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < messages; ++i)
    self->receive([&](outcome_atom, std::int64_t latency, bool ok) {
      latencies.push_back(latency);
      bad += ok ? 0 : 1;
    });
  for (auto& h : heads) self->send_exit(h, caf::exit_reason::user_shutdown);
  return latency_chains::summarize(latencies, bad, p);
}
