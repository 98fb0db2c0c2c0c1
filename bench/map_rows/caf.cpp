// map_rows, CAF 0.17: scatter/gather. The caller splits each row into
// `map_workers` chunks, sends one to each worker actor, gathers the mapped
// chunks in order, reduces the row, then goes on with the next row.
#include "impls.hpp"

#include <numeric>

#include "common/caf_support.hpp"

namespace {

using go_atom = caf::atom_constant<caf::atom("go")>;
using chunk_atom = caf::atom_constant<caf::atom("chunk")>;

caf::behavior map_worker(caf::event_based_actor*, std::int64_t spin) {
  return {[spin](chunk_atom, std::int64_t index, std::vector<double> data) {
    for (auto& x : data) x = bench::synthetic_work(x, spin);
    return caf::make_message(chunk_atom::value, index, std::move(data));
  }};
}

struct caller_state {
  std::vector<caf::actor> workers;
  std::vector<std::vector<double>> parts;
  std::int64_t row = 0;
  std::int64_t pending = 0;
  std::vector<double> sums;
  caf::response_promise done;
};

caf::behavior caller(caf::stateful_actor<caller_state>* self, std::int64_t rows, std::int64_t cols, std::int64_t spin,
                     std::int64_t map_workers) {
  for (std::int64_t i = 0; i < map_workers; ++i) self->state.workers.push_back(self->spawn(map_worker, spin));
  auto scatter = [=] {
    auto in = bench::map_rows::row(self->state.row, cols);
    auto n = static_cast<std::size_t>(map_workers);
    self->state.parts.assign(n, {});
    self->state.pending = map_workers;
    for (std::size_t k = 0; k < n; ++k) {
      auto b = in.size() * k / n, e = in.size() * (k + 1) / n;
      self->send(self->state.workers[k], chunk_atom::value, static_cast<std::int64_t>(k),
                 std::vector<double>(in.begin() + static_cast<std::ptrdiff_t>(b),
                                     in.begin() + static_cast<std::ptrdiff_t>(e)));
    }
  };
  return {
      [=](go_atom) {
        self->state.done = self->make_response_promise();
        scatter();
        return self->state.done;
      },
      [=](chunk_atom, std::int64_t index, std::vector<double>& data) {
        self->state.parts[static_cast<std::size_t>(index)] = std::move(data);
        if (--self->state.pending > 0) return;
        double sum = 0;
        for (auto& part : self->state.parts) sum = std::accumulate(part.begin(), part.end(), sum);
        self->state.sums.push_back(sum);
        if (++self->state.row < rows) {
          scatter();
          return;
        }
        self->state.done.deliver(self->state.sums);
        for (auto& w : self->state.workers) self->send_exit(w, caf::exit_reason::user_shutdown);
        self->quit();
      },
  };
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto rows = p.get("rows"), cols = p.get("cols"), spin = p.get("spin");
  const auto map_workers = p.get("map_workers");
  caf_support::config cfg{map_workers + 1};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, map_workers + 1);
  caf::scoped_actor self{sys};
  auto c = sys.spawn(caller, rows, cols, spin, map_workers);
  stopwatch sw;
  std::vector<double> sums;
  std::string failure;
  self->request(c, caf::infinite, go_atom::value)
      .receive([&](std::vector<double>& s) { sums = std::move(s); },
               [&](caf::error& e) { failure = "caller failed: " + sys.render(e); });
  sample s;
  s.wall_s = sw.seconds();
  check(failure.empty(), failure);
  map_rows::check_sums(sums, p);
  return s;
}
