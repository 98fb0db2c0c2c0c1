// matmul, CAF 0.17: one event-based actor per row block, gathered by a
// scoped actor (as troupe_actors).
#include "impls.hpp"

#include <algorithm>

#include "common/caf_support.hpp"

namespace {

using go_atom = caf::atom_constant<caf::atom("go")>;
using block_atom = caf::atom_constant<caf::atom("block")>;

caf::behavior block_worker(caf::event_based_actor*, const float* a, const float* b, std::size_t n, std::int64_t index,
                           std::size_t r0, std::size_t r1) {
  return {[=](go_atom) {
    std::vector<float> rows((r1 - r0) * n);
    bench::matmul::multiply_rows(a, b, rows.data(), n, r0, r1);
    return caf::make_message(block_atom::value, index, std::move(rows));
  }};
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto n = p.get("n"), blocks = p.get("blocks"), workers = p.get("workers");
  const auto un = static_cast<std::size_t>(n);
  const auto a = matmul::a(n), b = matmul::b(n);
  caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  std::vector<caf::actor> actors;
  for (std::int64_t k = 0; k < blocks; ++k)
    actors.push_back(sys.spawn(block_worker, a.data(), b.data(), un, k, matmul::block_begin(n, blocks, k),
                               matmul::block_begin(n, blocks, k + 1)));
  stopwatch sw;
  for (auto& x : actors) self->send(x, go_atom::value);
  std::vector<float> c(un * un);
  std::string failure;
  for (std::int64_t got = 0; got < blocks && failure.empty(); ++got) {
    self->receive(
        [&](block_atom, std::int64_t index, std::vector<float>& rows) {
          std::copy(rows.begin(), rows.end(),
                    c.begin() + static_cast<std::ptrdiff_t>(matmul::block_begin(n, blocks, index) * un));
        },
        caf::after(std::chrono::seconds{100}) >> [&] { failure = "no block within 100 s"; });
  }
  sample s;
  s.wall_s = sw.seconds();
  for (auto& x : actors) self->send_exit(x, caf::exit_reason::user_shutdown);
  check(failure.empty(), failure);
  matmul::check_product(c, n);
  return s;
}
