// matmul, seq: the triple loop (i, k, j) on one thread.
#include "impls.hpp"

bench::sample bench::run_seq(const params& p) {
  const auto n = p.get("n");
  const auto a = matmul::a(n), b = matmul::b(n);
  stopwatch sw;
  std::vector<float> c(static_cast<std::size_t>(n * n));
  matmul::multiply_rows(a.data(), b.data(), c.data(), static_cast<std::size_t>(n), 0, static_cast<std::size_t>(n));
  sample s;
  s.wall_s = sw.seconds();
  matmul::check_product(c, n);
  return s;
}
