// remote_scale: many troupe::net nodes on this machine, all to all over
// loopback (CURVE, every node trusting every other's key).
//
// params:
//   nodes     node processes: 8, 16, 32
//   load_ms   how long every node sends requests to every other (quick 2 s)
// impls:
//   troupe_curve  N forked member processes (1 worker each, plus the node's
//                 I/O thread and ZeroMQ's), keys made before the fork
// Phases, each member driven by text lines on a pipe from this process:
//   mesh   every member looks up every other's published "echo" (blocking
//          remote_actor, one after the other); the measured region: from the
//          moment the members get the list of endpoints until the last one
//          has every handle (CLOCK_MONOTONIC, shared by the processes);
//   idle   5 s with nothing to do: CPU time of each member from
//          /proc/<pid>/stat, its resident memory (VmRSS) at the end, and the
//          frames it sent meanwhile (heartbeats: node_stats::frames_out);
//   load   each member keeps 4 int64 messages in flight to every other
//          member's echo (which sends each back) for load_ms.
// Figure: mesh_ms (time to connect the full mesh). Extras: lookup_p50_us
// (median of all lookups), idle_cpu_pct_max / _mean (percent of one core per
// node), rss_mib_max, idle_frames_per_s (per node), peers_min / peers_max
// (connections per node once meshed), msgs_per_s (echo round trips per
// second, all nodes together).
// Check: every member finds every other; every member exits cleanly.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <troupe/net/node.hpp>
#include <troupe/troupe.hpp>

#include "common/harness.hpp"
#include "common/peer_process.hpp"

namespace {

namespace net = troupe::net;
using bench::peer::clock;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count();
}

/// Reads a line from `fd` (blocking, up to `deadline`); "" at EOF or timeout.
std::string read_line(int fd, std::string& buf, clock::time_point deadline) {
  for (;;) {
    if (auto nl = buf.find('\n'); nl != std::string::npos) {
      auto line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) return {};
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left, 1000)));
    if (rc < 0 && errno != EINTR) return {};
    if (rc <= 0) continue;
    char tmp[4096];
    const auto n = ::read(fd, tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {};
    buf.append(tmp, static_cast<std::size_t>(n));
  }
}

void write_line(int fd, std::string line) {
  line += '\n';
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const auto n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

/// One member, seen from this process: its pid and both ends of its pipes.
struct member {
  pid_t pid = -1;
  int to = -1, from = -1;
  std::string buf;
  std::string line(clock::time_point deadline) {
    auto l = read_line(from, buf, deadline);
    if (l.rfind("error ", 0) == 0) throw std::runtime_error("member " + std::to_string(pid) + ": " + l.substr(6));
    if (l.empty()) throw std::runtime_error("member " + std::to_string(pid) + " said nothing by the deadline");
    return l;
  }
  void kill() noexcept {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      int st = 0;
      while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      pid = -1;
    }
    if (to >= 0) ::close(to);
    if (from >= 0) ::close(from);
    to = from = -1;
  }
};

/// CPU seconds (user + system) of process `pid`.
double cpu_seconds(pid_t pid) {
  std::ifstream f{"/proc/" + std::to_string(pid) + "/stat"};
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::istringstream in{all.substr(all.rfind(')') + 2)};
  std::string field;
  double ut = 0, st = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) ut = std::stod(field);
    if (i == 15) st = std::stod(field);
  }
  return (ut + st) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double rss_mib(pid_t pid) {
  std::ifstream f{"/proc/" + std::to_string(pid) + "/status"};
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

/// The member process: a node publishing "echo", driven by `in`, answering on `out`.
void serve(std::size_t self, const std::vector<net::key_pair>& keys, int in, int out) {
  net::add_message<std::int64_t>();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  net::node_config cfg;
  cfg.name = "scale " + std::to_string(self);
  cfg.keys = keys[self];
  for (const auto& k : keys) cfg.trusted_keys.push_back(k.public_key);
  net::node node{sys, cfg};
  const auto ep = node.listen("tcp://127.0.0.1:*");
  node.publish(sys.spawn([](troupe::event_actor&) { return troupe::behavior{[](std::int64_t v) { return v; }}; }),
               "echo");
  write_line(out, "port " + ep.substr(ep.rfind(':') + 1));
  std::string buf;
  const auto deadline = clock::now() + std::chrono::seconds{200};
  std::vector<troupe::actor> peers;
  for (;;) {
    std::istringstream cmd{read_line(in, buf, deadline)};
    std::string word;
    cmd >> word;
    if (word == "mesh") {
      std::vector<int> ports;
      for (int p; cmd >> p;) ports.push_back(p);
      std::string lat;
      for (std::size_t j = 0; j < ports.size(); ++j) {
        if (j == self) continue;
        const auto t0 = clock::now();
        peers.push_back(node.remote_actor({"tcp://127.0.0.1:" + std::to_string(ports[j]), keys[j].public_key}, "echo",
                                          std::chrono::seconds{30}));
        lat += ' ' + std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count());
      }
      write_line(out, "meshed " + std::to_string(now_ns()) + lat);
    } else if (word == "stats") {
      const auto s = node.stats();
      write_line(out, "stats " + std::to_string(s.peers) + ' ' + std::to_string(s.frames_out));
    } else if (word == "load") {
      std::int64_t ms = 0;
      cmd >> ms;
      auto done = std::make_shared<std::promise<std::int64_t>>();
      auto f = done->get_future();
      const auto until = clock::now() + std::chrono::milliseconds{ms};
      sys.spawn([&peers, until, done](troupe::event_actor& me) {
        auto st = std::make_shared<std::pair<std::int64_t, std::int64_t>>(0, 0);  // replies, in flight
        for (const auto& p : peers)
          for (std::int64_t k = 0; k < 4; ++k, ++st->second) me.send(p, k);
        return troupe::behavior{[&me, st, until, done](std::int64_t v) {
          ++st->first;
          if (clock::now() < until) {
            me.send(me.sender(), v);
          } else if (--st->second == 0) {
            done->set_value(st->first);
            me.quit();
          }
        }};
      });
      if (f.wait_until(deadline) != std::future_status::ready) throw std::runtime_error("load did not end");
      write_line(out, "load " + std::to_string(f.get()));
    } else if (word == "quit") {
      return;
    } else {
      throw std::runtime_error("unexpected command '" + word + "'");
    }
  }
}

bench::sample run(const bench::params& p) {
  const auto n = static_cast<std::size_t>(p.get("nodes"));
  const auto load_ms = p.get("load_ms");
  const auto deadline = bench::peer::deadline_from_now(std::chrono::seconds{200});
  std::vector<net::key_pair> keys;
  for (std::size_t i = 0; i < n; ++i) keys.push_back(net::generate_key_pair());
  std::vector<member> ms(n);
  struct reaper {
    std::vector<member>& ms;
    ~reaper() {
      for (auto& m : ms) m.kill();
    }
  } reap{ms};
  // Fork every member before this process starts a thread.
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  for (std::size_t i = 0; i < n; ++i) {
    int down[2], up[2];
    if (::pipe2(down, O_CLOEXEC) != 0 || ::pipe2(up, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork");
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(4);
      ::close(down[1]);
      ::close(up[0]);
      int code = 0;
      try {
        serve(i, keys, down[0], up[1]);
      } catch (const std::exception& e) {
        std::string what = e.what();
        std::replace(what.begin(), what.end(), '\n', ' ');
        write_line(up[1], "error " + what);
        code = 1;
      }
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(code);
    }
    ::close(down[0]);
    ::close(up[1]);
    ms[i].pid = pid;
    ms[i].to = down[1];
    ms[i].from = up[0];
  }
  std::string ports;
  for (auto& m : ms) {
    std::istringstream l{m.line(deadline)};
    std::string word, port;
    l >> word >> port;
    bench::check(word == "port", "a member did not report its port");
    ports += ' ' + port;
  }

  bench::sample s;
  // Mesh.
  const auto t0 = now_ns();
  for (auto& m : ms) write_line(m.to, "mesh" + ports);
  std::int64_t last = t0;
  std::vector<std::int64_t> lat;
  for (auto& m : ms) {
    std::istringstream l{m.line(deadline)};
    std::string word;
    std::int64_t done = 0;
    l >> word >> done;
    bench::check(word == "meshed", "a member did not mesh");
    last = std::max(last, done);
    for (std::int64_t x; l >> x;) lat.push_back(x);
  }
  s.wall_s = static_cast<double>(last - t0) / 1e9;
  bench::check(lat.size() == n * (n - 1), "lookups missing");
  std::nth_element(lat.begin(), lat.begin() + static_cast<std::ptrdiff_t>(lat.size() / 2), lat.end());
  s.add("lookup_p50_us", static_cast<double>(lat[lat.size() / 2]) / 1e3, "us");

  // Idle: let the last handshakes settle, then 5 s of nothing.
  std::this_thread::sleep_for(std::chrono::milliseconds{500});
  auto stats = [&](std::vector<std::size_t>& peers, std::vector<double>& frames) {
    for (auto& m : ms) write_line(m.to, "stats");
    peers.clear();
    frames.clear();
    for (auto& m : ms) {
      std::istringstream l{m.line(deadline)};
      std::string word;
      std::size_t pe = 0;
      double fr = 0;
      l >> word >> pe >> fr;
      peers.push_back(pe);
      frames.push_back(fr);
    }
  };
  std::vector<std::size_t> peers0, peers1;
  std::vector<double> frames0, frames1, cpu0, cpu1;
  stats(peers0, frames0);
  for (auto& m : ms) cpu0.push_back(cpu_seconds(m.pid));
  const auto idle_t0 = clock::now();
  std::this_thread::sleep_for(std::chrono::seconds{5});
  for (auto& m : ms) cpu1.push_back(cpu_seconds(m.pid));
  const double idle_s = std::chrono::duration<double>(clock::now() - idle_t0).count();
  stats(peers1, frames1);
  double cpu_max = 0, cpu_sum = 0, rss_max = 0, frames_sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double pct = 100.0 * (cpu1[i] - cpu0[i]) / idle_s;
    cpu_max = std::max(cpu_max, pct);
    cpu_sum += pct;
    rss_max = std::max(rss_max, rss_mib(ms[i].pid));
    frames_sum += frames1[i] - frames0[i];
  }
  s.add("idle_cpu_pct_max", cpu_max, "%");
  s.add("idle_cpu_pct_mean", cpu_sum / static_cast<double>(n), "%");
  s.add("rss_mib_max", rss_max, "MiB");
  s.add("idle_frames_per_s", frames_sum / static_cast<double>(n) / idle_s, "frames/s");
  s.add("peers_min", static_cast<double>(*std::min_element(peers1.begin(), peers1.end())), "connections");
  s.add("peers_max", static_cast<double>(*std::max_element(peers1.begin(), peers1.end())), "connections");

  // Load: every member to every other.
  const auto load_t0 = clock::now();
  for (auto& m : ms) write_line(m.to, "load " + std::to_string(load_ms));
  std::int64_t replies = 0;
  for (auto& m : ms) {
    std::istringstream l{m.line(deadline)};
    std::string word;
    std::int64_t r = 0;
    l >> word >> r;
    bench::check(word == "load", "a member did not report its load");
    replies += r;
  }
  const double load_s = std::chrono::duration<double>(clock::now() - load_t0).count();
  s.add("msgs_per_s", static_cast<double>(replies) / load_s, "msgs/s", true);

  for (auto& m : ms) write_line(m.to, "quit");
  for (auto& m : ms) {
    int st = 0;
    pid_t r = 0;
    while ((r = ::waitpid(m.pid, &st, WNOHANG)) == 0 && clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds{2});
    bench::check(r == m.pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "a member did not exit cleanly");
    m.pid = -1;
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "remote_scale";
  s.description =
      "N troupe::net nodes all to all on loopback (CURVE): time to mesh, idle CPU and RSS per node, lookup latency, "
      "messages/s";
  s.impls = {{"troupe_curve", run}};
  s.primary = bench::metric{"mesh_ms", "ms", false,
                            [](const bench::sample& r, const bench::params&) { return r.wall_s * 1000.0; }};
  s.variants = [](bool full) {
    const std::int64_t load = full ? 5000 : 2000;
    std::vector<bench::variant> v;
    for (std::int64_t nodes : {8, 16, 32})
      v.push_back({std::to_string(nodes) + " nodes", {{"nodes", nodes}, {"load_ms", load}}});
    return v;
  };
  s.default_runs = 1;
  s.timeout_s = 240;
  return bench::run_main(argc, argv, s);
}
