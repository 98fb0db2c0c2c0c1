// net_namespaces.hpp: two network namespaces joined by a veth pair, for
// the multi-process tests of troupe::net (net_process_support.hpp) and the
// detection benchmark (bench/detection), which cut that link. No GoogleTest
// here, so that the benchmark can include it. Needs root and iproute2; where
// either is missing, `ok` is false and `why` says what failed.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace net_proc {

inline bool run_quiet(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()) == 0; }

/// Two network namespaces joined by a veth pair (removed again on exit).
/// Namespace `a` holds `veth_a` with address_a, `b` holds `veth_b` with
/// address_b; the names carry this process's id.
struct namespaces {
  static constexpr const char* address_a = "10.201.0.1";
  static constexpr const char* address_b = "10.201.0.2";
  std::string a, b, veth_a, veth_b;
  bool ok = false;
  std::string why;
  namespaces() {
    const auto id = std::to_string(getpid());
    a = "trp" + id + "a";
    b = "trp" + id + "b";
    veth_a = "trv" + id + "a";
    veth_b = "trv" + id + "b";
    if (geteuid() != 0) {
      why = "network namespaces need root (uid " + std::to_string(geteuid()) + ")";
      return;
    }
    if (!run_quiet("ip netns add " + a)) {
      why = "'ip netns add' does not work here (no iproute2, or no CAP_SYS_ADMIN in this container)";
      return;
    }
    const std::vector<std::string> steps = {
        "ip netns add " + b,
        "ip link add " + veth_a + " type veth peer name " + veth_b,
        "ip link set " + veth_a + " netns " + a,
        "ip link set " + veth_b + " netns " + b,
        "ip -n " + a + " addr add " + address_a + "/24 dev " + veth_a,
        "ip -n " + b + " addr add " + address_b + "/24 dev " + veth_b,
        "ip -n " + a + " link set lo up",
        "ip -n " + b + " link set lo up",
        "ip -n " + a + " link set " + veth_a + " up",
        "ip -n " + b + " link set " + veth_b + " up",
        "ip netns exec " + a + " true",  // exec into a namespace may still be refused (no /sys remount)
    };
    for (auto& cmd : steps)
      if (!run_quiet(cmd)) {
        why = "setting up the namespaces failed at: " + cmd;
        return;
      }
    ok = true;
  }
  ~namespaces() {
    run_quiet("ip netns del " + a);
    run_quiet("ip netns del " + b);
  }
  namespaces(const namespaces&) = delete;
  namespaces& operator=(const namespaces&) = delete;

  /// Moves the calling thread into namespace `name` (threads it starts
  /// afterwards are there too): call it before the process starts any.
  /// Throws std::runtime_error naming the namespace.
  static void enter(const std::string& name) {
    const std::string path = "/run/netns/" + name;  // where 'ip netns add' keeps it
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
    const int rc = ::setns(fd, CLONE_NEWNET);
    const int err = errno;
    ::close(fd);
    if (rc != 0) throw std::runtime_error("cannot enter network namespace " + name + ": " + std::strerror(err));
  }
};

}  // namespace net_proc
