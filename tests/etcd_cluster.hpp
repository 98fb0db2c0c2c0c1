// etcd_cluster.hpp: a real etcd cluster of a few members on loopback (free
// ports, data under a test directory), for the membership tests: started
// by the test, members killed one by one, all killed at the end. Debian's
// etcd-server. No GoogleTest here.
#pragma once

#include <chrono>
#include <csignal>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "child_process.hpp"
#include "troupe/net/membership.hpp"

namespace etcd_support {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

/// etcd members on 127.0.0.1, one process each, killed when it goes.
class cluster {
 public:
  static constexpr const char* binary = "/usr/bin/etcd";
  static bool installed() { return ::access(binary, X_OK) == 0; }

  cluster(fs::path dir, std::size_t members) : dir_{std::move(dir)} {
    const auto ports = child_process::free_ports(2 * members);
    std::string initial;
    for (std::size_t i = 0; i < members; ++i) {
      clients_.push_back("http://127.0.0.1:" + std::to_string(ports[2 * i]));
      peers_.push_back("http://127.0.0.1:" + std::to_string(ports[2 * i + 1]));
      initial += (i == 0 ? "" : ",") + name(i) + "=" + peers_[i];
    }
    for (std::size_t i = 0; i < members; ++i) {
      fs::create_directories(dir_ / name(i));
      procs_.push_back(
          std::make_unique<child_process::process>(std::vector<std::string>{binary,
                                                                            "--name",
                                                                            name(i),
                                                                            "--data-dir",
                                                                            (dir_ / name(i) / "data").string(),
                                                                            "--listen-client-urls",
                                                                            clients_[i],
                                                                            "--advertise-client-urls",
                                                                            clients_[i],
                                                                            "--listen-peer-urls",
                                                                            peers_[i],
                                                                            "--initial-advertise-peer-urls",
                                                                            peers_[i],
                                                                            "--initial-cluster",
                                                                            initial,
                                                                            "--initial-cluster-state",
                                                                            "new",
                                                                            "--initial-cluster-token",
                                                                            dir_.filename().string(),
                                                                            "--logger",
                                                                            "zap",
                                                                            "--log-level",
                                                                            "error"},
                                                   dir_ / name(i) / "out", dir_ / name(i) / "err"));
    }
    // Ready: every member answers a read through the cluster (a leader is elected).
    for (std::size_t i = 0; i < members; ++i) {
      troupe::net::registry probe{{.etcd = {clients_[i]}, .timeout = 1s, .log = [](const std::string&) {}}};
      std::string last;
      const auto until = std::chrono::steady_clock::now() + 30s;
      for (;;) {
        try {
          (void)probe.members();
          break;
        } catch (const std::exception& e) {
          last = e.what();
        }
        if (std::chrono::steady_clock::now() > until || !procs_[i]->running())
          throw std::runtime_error{"etcd member " + name(i) + " did not start within 30 s: " + last +
                                   "; its log: " + child_process::slurp(dir_ / name(i) / "err").substr(0, 2000)};
        std::this_thread::sleep_for(50ms);
      }
    }
  }
  ~cluster() {
    for (auto& p : procs_) p.reset();  // SIGKILL, reaped
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  cluster(const cluster&) = delete;
  cluster& operator=(const cluster&) = delete;

  /// Every member's client URL.
  const std::vector<std::string>& urls() const { return clients_; }
  /// SIGKILL to member `i`.
  void kill(std::size_t i) { procs_.at(i).reset(); }

 private:
  static std::string name(std::size_t i) { return "m" + std::to_string(i); }

  fs::path dir_;
  std::vector<std::string> clients_, peers_;
  std::vector<std::unique_ptr<child_process::process>> procs_;
};

}  // namespace etcd_support
