// matmul, troupe on the CPU: row blocks over event actors, and the map
// pattern over rows.
#include "impls.hpp"

#include <troupe/troupe.hpp>

#include <algorithm>
#include <numeric>
#include <span>

namespace {

struct go_atom {};

/// One block's rows of C, the reply of a block actor.
struct block_rows {
  std::int64_t index = 0;
  std::vector<float> rows;
};

}  // namespace

bench::sample bench::run_troupe_actors(const params& p) {
  const auto n = p.get("n"), blocks = p.get("blocks");
  const auto un = static_cast<std::size_t>(n);
  const auto a = matmul::a(n), b = matmul::b(n);
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  troupe::scoped_actor self{sys};
  std::vector<troupe::actor> actors;
  for (std::int64_t k = 0; k < blocks; ++k) {
    const auto r0 = matmul::block_begin(n, blocks, k), r1 = matmul::block_begin(n, blocks, k + 1);
    actors.push_back(sys.spawn([pa = a.data(), pb = b.data(), un, r0, r1, k](troupe::event_actor&) {
      return troupe::behavior{[=](go_atom) {
        block_rows out{k, std::vector<float>((r1 - r0) * un)};
        matmul::multiply_rows(pa, pb, out.rows.data(), un, r0, r1);
        return out;
      }};
    }));
  }
  stopwatch sw;
  for (auto& x : actors) self->send(x, go_atom{});
  std::vector<float> c(un * un);
  for (std::int64_t got = 0; got < blocks; ++got) {
    const bool ok = self->receive_for(std::chrono::seconds{100}, [&](block_rows& r) {
      std::copy(r.rows.begin(), r.rows.end(),
                c.begin() + static_cast<std::ptrdiff_t>(matmul::block_begin(n, blocks, r.index) * un));
    });
    check(ok, "no block within 100 s (" + std::to_string(got) + " of " + std::to_string(blocks) + " gathered)");
  }
  sample s;
  s.wall_s = sw.seconds();
  matmul::check_product(c, n);
  return s;
}

bench::sample bench::run_troupe_map(const params& p) {
  const auto n = p.get("n");
  const auto un = static_cast<std::size_t>(n);
  const auto a = matmul::a(n), b = matmul::b(n);
  // The calling thread takes part in the map: workers - 1 more threads.
  const auto workers = std::max<std::int64_t>(1, p.get("workers") - 1);
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(workers)}};
  std::vector<std::int32_t> rows(un);
  std::iota(rows.begin(), rows.end(), 0);
  stopwatch sw;
  auto out = troupe::map(
      sys, std::span<const std::int32_t>{rows},
      [&](std::int32_t i) {
        std::vector<float> row(un);
        const auto r = static_cast<std::size_t>(i);
        matmul::multiply_rows(a.data(), b.data(), row.data(), un, r, r + 1);
        return row;
      },
      troupe::partition::dynamic(4));
  std::vector<float> c(un * un);
  for (std::size_t i = 0; i < un; ++i)
    std::copy(out[i].begin(), out[i].end(), c.begin() + static_cast<std::ptrdiff_t>(i * un));
  sample s;
  s.wall_s = sw.seconds();
  matmul::check_product(c, n);
  return s;
}
