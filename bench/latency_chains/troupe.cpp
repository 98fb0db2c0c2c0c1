// latency_chains, troupe: chains of event actors; the heavy actor maps
// sequentially (troupe_seq) or through a shared map accelerator (troupe).
#include "impls.hpp"

#include <troupe/troupe.hpp>

#include <chrono>
#include <functional>
#include <numeric>
#include <thread>

namespace {

using clock_type = std::chrono::steady_clock;

struct token {
  std::int64_t seq;
  clock_type::time_point stamp;
  double result;  // the heavy step's sum, checked at the end of the chain
};

struct outcome {
  std::int64_t latency_ns;
  bool ok;
};

bench::sample run(const bench::params& p, bool accelerated) {
  const auto chains = p.get("chains"), length = p.get("length"), heavy = p.get("heavy");
  const auto rate = p.get("rate"), messages = p.get("messages");
  const auto elements = p.get("elements"), spin = p.get("spin");
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  troupe::actor acc;
  if (accelerated)
    acc =
        troupe::spawn_map_accelerator<double, double>(sys, {.workers = static_cast<std::size_t>(p.get("map_workers"))});
  troupe::scoped_actor self{sys};
  auto main = self.handle();
  std::vector<troupe::actor> heads;
  for (std::int64_t c = 0; c < chains; ++c) {
    // the last actor reports to main; the others forward
    troupe::actor next = sys.spawn([main, elements, spin](troupe::event_actor& s) {
      return troupe::behavior{[&s, main, elements, spin](token t) {
        auto latency = std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - t.stamp).count();
        // spot-check 2% of the results (after the latency is taken)
        bool ok = t.seq % 50 != 0 || t.result == bench::latency_chains::heavy_sum(t.seq, elements, spin);
        s.send(main, outcome{latency, ok});
      }};
    });
    for (std::int64_t pos = length - 2; pos >= 0; --pos) {
      if (pos != heavy) {
        next = sys.spawn([](troupe::event_actor& s,
                            troupe::actor to) { return troupe::behavior{[&s, to](token t) { s.send(to, t); }}; },
                         next);
      } else if (!accelerated) {
        next = sys.spawn(
            [elements, spin](troupe::event_actor& s, troupe::actor to) {
              return troupe::behavior{[&s, to, elements, spin](token t) {
                auto data = bench::latency_chains::payload(t.seq, elements);
                for (auto& x : data) x = bench::synthetic_work(x, spin);
                t.result = std::accumulate(data.begin(), data.end(), 0.0);
                s.send(to, t);
              }};
            },
            next);
      } else {
        next = sys.spawn(
            [elements, spin, acc](troupe::event_actor& s, troupe::actor to) {
              return troupe::behavior{[&s, to, elements, spin, acc](token t) {
                std::function<double(const double&)> f = [spin](const double& x) {
                  return bench::synthetic_work(x, spin);
                };
                s.request(acc, troupe::infinite, std::move(f), bench::latency_chains::payload(t.seq, elements))
                    .then([&s, to, t](std::vector<double>& out) mutable {
                      t.result = std::accumulate(out.begin(), out.end(), 0.0);
                      s.send(to, t);
                    });
              }};
            },
            next);
      }
    }
    heads.push_back(next);
  }
  // The generator: the main thread, at a fixed rate.
  const auto period = std::chrono::nanoseconds{1'000'000'000 / rate};
  const auto t0 = clock_type::now();
  for (std::int64_t i = 0; i < messages; ++i) {
    std::this_thread::sleep_until(t0 + i * period);
    self->send(heads[static_cast<std::size_t>(i % chains)], token{i, clock_type::now(), 0.0});
  }
  std::vector<std::int64_t> latencies;
  std::int64_t bad = 0;
  for (std::int64_t i = 0; i < messages; ++i)
    self->receive([&](outcome o) {
      latencies.push_back(o.latency_ns);
      bad += o.ok ? 0 : 1;
    });
  return bench::latency_chains::summarize(latencies, bad, p);
}

}  // namespace

bench::sample bench::run_troupe(const params& p) { return run(p, true); }
bench::sample bench::run_troupe_seq(const params& p) { return run(p, false); }
