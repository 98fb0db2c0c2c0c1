#include "impls.hpp"

bench::sample bench::run_troupe(const bench::params&) {
  throw bench::not_available{"troupe runtime not built yet"};
}
