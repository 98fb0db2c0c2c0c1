// tests/consumer/modules/main.cpp: uses the optional modules of an installed
// troupe through their umbrella headers, one cheap real call each:
//   net      a CURVE key pair (libsodium through ZeroMQ)
//   opencl   the devices of every platform (none is fine: no ICD installed)
//   metrics  the exporter's port parser, and from_env without the variable
//            (no exporter made, so no port is bound)
#include <troupe/metrics.hpp>
#include <troupe/net.hpp>
#include <troupe/opencl.hpp>
#include <troupe/troupe.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>

int main() {
  try {
    // net: Z85 keys are 40 characters.
    auto keys = troupe::net::generate_key_pair();
    if (keys.public_key.size() != 40 || keys.secret_key.size() != 40 || keys.public_key == keys.secret_key) {
      std::fprintf(stderr, "troupe_modules_consumer: bad key pair (%zu, %zu characters)\n", keys.public_key.size(),
                   keys.secret_key.size());
      return 1;
    }
    std::puts("troupe_modules_consumer: net: key pair ok");

    // opencl: an empty list when there is no platform.
    auto devices = troupe::opencl::devices();
    std::printf("troupe_modules_consumer: opencl: %zu device(s)\n", devices.size());
    for (const auto& d : devices) std::printf("  %s (%s)\n", d.info().name.c_str(), d.info().platform.c_str());

    // metrics
    if (troupe::metrics::exporter::parse_port("9464", "port") != 9464) {
      std::fputs("troupe_modules_consumer: parse_port(\"9464\") is not 9464\n", stderr);
      return 1;
    }
    ::unsetenv("TROUPE_METRICS_PORT");
    {
      troupe::actor_system sys{troupe::config{.workers = 1}};
      if (troupe::metrics::exporter::from_env(sys) != nullptr) {
        std::fputs("troupe_modules_consumer: from_env made an exporter without TROUPE_METRICS_PORT\n", stderr);
        return 1;
      }
    }
    std::puts("troupe_modules_consumer: metrics: ok");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "troupe_modules_consumer: %s\n", e.what());
    return 1;
  }
  return 0;
}
