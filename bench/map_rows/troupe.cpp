// map_rows, troupe: the sequential actor, and the actor using a map accelerator.
#include "impls.hpp"

#include <troupe/troupe.hpp>

#include <functional>
#include <numeric>

namespace {
struct go_atom {};
}  // namespace

bench::sample bench::run_troupe_seq(const params& p) {
  const auto rows = p.get("rows"), cols = p.get("cols"), spin = p.get("spin");
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::scoped_actor self{sys};
  auto worker = sys.spawn([rows, cols, spin](troupe::event_actor&) {
    return troupe::behavior{[rows, cols, spin](go_atom) {
      std::vector<double> sums;
      for (std::int64_t r = 0; r < rows; ++r) {
        auto in = map_rows::row(r, cols);
        std::vector<double> out(in.size());
        for (std::size_t i = 0; i < in.size(); ++i) out[i] = synthetic_work(in[i], spin);
        sums.push_back(std::accumulate(out.begin(), out.end(), 0.0));
      }
      return sums;
    }};
  });
  stopwatch sw;
  std::vector<double> sums;
  self->request(worker, troupe::infinite, go_atom{})
      .receive([&](std::vector<double>& s) { sums = std::move(s); },
               [](troupe::error& e) { throw std::runtime_error(e.to_string()); });
  sample s;
  s.wall_s = sw.seconds();
  map_rows::check_sums(sums, p);
  return s;
}

bench::sample bench::run_troupe(const params& p) {
  const auto rows = p.get("rows"), cols = p.get("cols"), spin = p.get("spin");
  const auto map_workers = static_cast<std::size_t>(p.get("map_workers"));
  troupe::actor_system sys{troupe::config{.workers = 1}};
  auto acc = troupe::spawn_map_accelerator<double, double>(sys, {.workers = map_workers});
  troupe::scoped_actor self{sys};
  // The calling actor: row after row, request the map, then reduce.
  struct caller_state {
    troupe::event_actor* self;
    troupe::actor acc;
    std::int64_t rows, cols, spin;
    std::vector<double> sums;
    troupe::response_promise done;
    void ask(std::int64_t r) {
      if (r == rows) {
        done.deliver(std::move(sums));
        return;
      }
      std::function<double(const double&)> f = [s = spin](const double& x) { return synthetic_work(x, s); };
      self->request(acc, troupe::infinite, std::move(f), map_rows::row(r, cols))
          .then([this, r](std::vector<double>& out) {
            sums.push_back(std::accumulate(out.begin(), out.end(), 0.0));
            ask(r + 1);
          });
    }
  };
  auto caller = sys.spawn([rows, cols, spin, acc](troupe::event_actor& s) {
    auto st = std::make_shared<caller_state>(caller_state{&s, acc, rows, cols, spin, {}, {}});
    return troupe::behavior{[&s, st](go_atom) {
      st->done = s.make_response_promise();
      st->ask(0);
      return st->done;
    }};
  });
  stopwatch sw;
  std::vector<double> sums;
  self->request(caller, troupe::infinite, go_atom{})
      .receive([&](std::vector<double>& s) { sums = std::move(s); },
               [](troupe::error& e) { throw std::runtime_error(e.to_string()); });
  sample s;
  s.wall_s = sw.seconds();
  map_rows::check_sums(sums, p);
  return s;
}
