// remote_throughput, troupe: placeholder until troupe::net exists; both
// implementations (plain and CURVE-encrypted transport) report themselves as
// not available.
#include "impls.hpp"

bench::sample bench::run_troupe(const params&) { throw bench::not_available("troupe::net not built yet"); }

bench::sample bench::run_troupe_curve(const params&) { throw bench::not_available("troupe::net not built yet"); }
