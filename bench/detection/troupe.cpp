// detection, troupe::net: see impls.hpp. The client is the harness's child:
// it makes the namespaces, forks the CPU hogs and the server process before
// it starts any thread (fork copies only the calling thread), then enters
// its own namespace and starts the jitter relay (where netem is missing),
// its actor system and node. Both processes: 1 worker, plus the node's I/O
// thread and ZeroMQ's; the client also the relay's thread.
#include "impls.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "common/peer_process.hpp"
#include "common/troupe_net_support.hpp"
#include "jitter_relay.hpp"
#include "net_namespaces.hpp"

namespace {

namespace peer = bench::peer;
namespace tn = bench::troupe_net_support;
using bench::detection::fault;
using namespace std::chrono_literals;

struct stop_atom {};
struct stats_atom {};

void register_types() {
  troupe::net::add_type<stop_atom>("detection.stop_atom");
  troupe::net::add_type<stats_atom>("detection.stats_atom");
  troupe::net::add_message<std::int64_t>();
  troupe::net::add_message<stop_atom>();
  troupe::net::add_message<stats_atom>();
  troupe::net::add_message<std::int64_t, std::int64_t>();
}

/// Plaintext, the profile of the variant, and no log lines: the node logs
/// every peer it finds unreachable, which is what the runs provoke.
troupe::net::node_config node_config(bool lan, const char* name) {
  troupe::net::node_config c;
  if (lan) c.use(troupe::net::liveness_profile::lan);
  c.security = troupe::net::security::plaintext;
  c.name = name;
  c.log = [](const std::string&) {};
  return c;
}

/// Where the two processes talk (impls.hpp, "The link"): across a veth pair
/// between two network namespaces, or over loopback; with netem jitter
/// where there is netem, or else through a relay in the client process
/// (jitter_relay.hpp) that delays every chunk the same way.
struct route {
  std::optional<net_proc::namespaces> ns;
  int jitter_ms = 0;        // netem's, on both ends of the veth pair
  int relay_jitter_ms = 0;  // the relay's, each way (client_endpoint), where netem gave none
  std::optional<net_proc::jitter_relay> relay;
  std::string why_no_veth;

  explicit route(int want_jitter_ms) : relay_jitter_ms{std::max(want_jitter_ms, 0)} {
    ns.emplace();
    if (!ns->ok) {
      why_no_veth = ns->why;
      ns.reset();
      return;
    }
    if (want_jitter_ms <= 0) return;
    const auto delay = std::to_string(want_jitter_ms) + "ms";
    const auto netem = [&](const std::string& space, const std::string& dev) {
      return net_proc::run_quiet("tc -n " + space + " qdisc add dev " + dev + " root netem delay " + delay + " " +
                                 delay);
    };
    if (!netem(ns->a, ns->veth_a)) return;  // no sch_netem here: the relay's jitter instead
    if (!netem(ns->b, ns->veth_b)) {
      net_proc::run_quiet("tc -n " + ns->a + " qdisc del dev " + ns->veth_a + " root");
      return;
    }
    jitter_ms = want_jitter_ms;
    relay_jitter_ms = 0;
  }

  bool veth() const { return ns.has_value(); }
  std::string server_host() const { return veth() ? net_proc::namespaces::address_a : "127.0.0.1"; }
  std::string server_namespace() const { return veth() ? ns->a : std::string{}; }

  /// In the client process, in its namespace, after the forks (the relay
  /// has a thread): where netem gave no jitter, a relay on loopback to the
  /// server's `port`, J ms +- J ms each way. The link between the
  /// namespaces lies between the relay and the server, so a cut still cuts
  /// the client off. Returns the endpoint the client dials.
  std::string client_endpoint(int port) {
    if (relay_jitter_ms > 0) {
      const std::chrono::milliseconds j{relay_jitter_ms};
      relay.emplace(net_proc::jitter_relay::settings{
          .target_host = server_host(), .target_port = port, .delay = j, .jitter = j, .seed = std::random_device{}()});
      return "tcp://127.0.0.1:" + std::to_string(relay->port());
    }
    return "tcp://" + server_host() + ":" + std::to_string(port);
  }
};

/// Busy-looping processes, each bounded by `until` and by its parent's life
/// (PR_SET_PDEATHSIG); killed and reaped when this object goes.
class cpu_hogs {
 public:
  cpu_hogs(std::int64_t n, peer::clock::time_point until) {
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t parent = ::getpid();
    for (std::int64_t i = 0; i < n; ++i) {
      const pid_t pid = ::fork();
      if (pid < 0) {
        const std::string why = std::strerror(errno);
        stop();
        throw std::runtime_error("fork of a CPU hog: " + why);
      }
      if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(4);
        spin(until);
        ::_exit(0);
      }
      pids_.push_back(pid);
    }
  }
  ~cpu_hogs() { stop(); }
  cpu_hogs(const cpu_hogs&) = delete;
  cpu_hogs& operator=(const cpu_hogs&) = delete;

 private:
  static void spin(peer::clock::time_point until) {
    volatile std::uint64_t sink = 0;
    while (peer::clock::now() < until)
      for (int i = 0; i < (1 << 20); ++i) sink = sink + 1;
  }

  void stop() noexcept {
    for (const pid_t pid : pids_) {
      ::kill(pid, SIGKILL);
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    pids_.clear();
  }

  std::vector<pid_t> pids_;
};

/// The server process: enters its namespace (when there is one), publishes
/// "echo" (answers an int64 with itself, stats_atom with this node's
/// peers_unreachable and peers_lost) and waits for stop_atom. In the
/// detection variants it is killed instead.
void serve(const peer::reporter& report, peer::clock::time_point deadline, const std::string& netns,
           const std::string& host, bool lan) {
  if (!netns.empty()) net_proc::namespaces::enter(netns);
  register_types();
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node{sys, node_config(lan, "detection-server")};
  std::promise<void> stopped;
  node.publish(sys.spawn([&stopped, &node](troupe::event_actor&) {
    return troupe::behavior{[](std::int64_t v) { return v; },
                            [&node](stats_atom) {
                              const auto st = node.stats();
                              return std::make_tuple(static_cast<std::int64_t>(st.peers_unreachable),
                                                     static_cast<std::int64_t>(st.peers_lost));
                            },
                            [&stopped](stop_atom) { stopped.set_value(); }};
  }),
               "echo");
  report.ports({tn::port_of(node.listen("tcp://" + host + ":*"))});
  if (stopped.get_future().wait_until(deadline) != std::future_status::ready)
    throw std::runtime_error("no stop message from the client by the deadline");
}

double ms_between(peer::clock::time_point from, peer::clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

/// What the client's watcher saw: the down_msg's reason and when it came.
struct down_seen {
  std::promise<std::pair<troupe::error, peer::clock::time_point>> down;
};

/// Detection variants: warm-up, the fault, the down_msg (impls.hpp).
bench::sample time_detection(const bench::params& p, troupe::actor_system& sys, const troupe::actor& echo,
                             peer::server_process& server, const route& l, const troupe::net::node_config& cfg,
                             peer::clock::time_point deadline) {
  using bench::check;
  const auto f = static_cast<fault>(p.get("fault"));
  {
    troupe::scoped_actor self{sys};
    bool answered = false;
    self->request(echo, 10s, std::int64_t{42})
        .receive([&](std::int64_t v) { answered = v == 42; }, [](troupe::error&) {});
    check(answered, "the first request to echo was not answered");
  }
  auto seen = std::make_shared<down_seen>();
  auto down = seen->down.get_future();
  std::promise<void> armed;
  sys.spawn(
      [seen, &armed](troupe::event_actor& self, const troupe::actor& target) {
        self.set_down_handler([seen](troupe::down_msg& d) { seen->down.set_value({d.reason, peer::clock::now()}); });
        self.monitor(target);
        armed.set_value();
        return troupe::behavior{[](int) {}};
      },
      echo);
  armed.get_future().wait();
  std::this_thread::sleep_for(std::chrono::milliseconds{p.get("warmup_ms")});

  bench::sample s;
  const auto t0 = peer::clock::now();
  switch (f) {
    case fault::kill:
      server.signal(SIGKILL);
      break;
    case fault::stop:
      server.signal(SIGSTOP);
      break;
    case fault::cut: {
      const auto cmd = "ip -n " + l.ns->a + " link set " + l.ns->veth_a + " down";
      check(net_proc::run_quiet(cmd), "cutting the link failed: " + cmd);
      s.add("cut_command_ms", ms_between(t0, peer::clock::now()), "ms");
      break;
    }
    case fault::none:
      throw std::logic_error("time_detection without a fault");
  }
  const auto limit = std::min(deadline, t0 + cfg.heartbeat_timeout + 10s);
  check(down.wait_until(limit) == std::future_status::ready,
        "no down_msg within heartbeat_timeout + 10 s of the fault");
  const auto [reason, at] = down.get();
  check(reason == troupe::net::net_errc::remote_unreachable,
        "the down_msg's reason is not remote_unreachable: " + reason.to_string());
  s.wall_s = std::chrono::duration<double>(at - t0).count();
  s.add("detection_ms", ms_between(t0, at), "ms");
  server.kill();  // SIGKILL ends a stopped process too; then it is reaped
  return s;
}

/// False-alarm variants: requests for `seconds` next to the CPU hogs, then
/// both nodes' counts (impls.hpp).
bench::sample count_false_alarms(const bench::params& p, troupe::actor_system& sys, troupe::net::node& node,
                                 troupe::actor echo, const troupe::net::remote_address& where,
                                 peer::server_process& server, const troupe::net::node_config& cfg,
                                 peer::clock::time_point deadline) {
  using bench::check;
  troupe::scoped_actor self{sys};
  const auto lookup_timeout = std::max<std::chrono::milliseconds>(2 * cfg.heartbeat_interval, 200ms);
  auto look_up = [&]() {
    try {
      echo = node.remote_actor(where, "echo", lookup_timeout);
    } catch (const troupe::net::net_error&) {
      std::this_thread::sleep_for(10ms);
    }
  };
  std::int64_t sent = 0, answered = 0, failed = 0;
  const auto t0 = peer::clock::now();
  const auto until = t0 + std::chrono::seconds{p.get("seconds")};
  while (peer::clock::now() < until) {
    if (!echo) {
      look_up();
      continue;
    }
    const std::int64_t k = ++sent;
    bool ok = false;
    self->request(echo, 3 * cfg.heartbeat_timeout, k)
        .receive([&](std::int64_t v) { ok = v == k; }, [](troupe::error&) {});
    if (ok) {
      ++answered;
    } else {
      ++failed;
      echo = troupe::actor{};
    }
    std::this_thread::sleep_for(10ms);
  }
  const double wall = std::chrono::duration<double>(peer::clock::now() - t0).count();
  std::int64_t server_unreachable = -1, server_lost = -1;
  for (int attempt = 0; attempt < 20 && server_unreachable < 0 && peer::clock::now() < deadline; ++attempt) {
    if (!echo) {
      look_up();
      continue;
    }
    self->request(echo, 5s, stats_atom{})
        .receive(
            [&](std::int64_t u, std::int64_t l) {
              server_unreachable = u;
              server_lost = l;
            },
            [&](troupe::error&) { echo = troupe::actor{}; });
  }
  check(server_unreachable >= 0, "the server's counts could not be read");
  const auto st = node.stats();  // before the server closes, which ends the session (counted as lost)
  self->send(echo, stop_atom{});
  server.join(deadline);
  check(answered > 0, "no request was answered");
  const auto client_unreachable = static_cast<double>(st.peers_unreachable);
  bench::sample s;
  s.wall_s = wall;
  s.add("false_unreachable", client_unreachable + static_cast<double>(server_unreachable), "count");
  s.add("client_unreachable", client_unreachable, "count");
  s.add("server_unreachable", static_cast<double>(server_unreachable), "count");
  s.add("sessions_lost", static_cast<double>(st.peers_lost) + static_cast<double>(server_lost), "count");
  s.add("failed_requests", static_cast<double>(failed), "count");
  s.add("requests_per_s", static_cast<double>(answered) / wall, "req/s", true);
  return s;
}

}  // namespace

bench::sample bench::run_troupe(const params& p) {
  const auto f = static_cast<fault>(p.get("fault"));
  const bool lan = p.get("lan") != 0;
  const auto deadline = peer::deadline_from_now(detection::time_limit(p));
  route l{static_cast<int>(p.get("jitter_ms"))};
  if (f == fault::cut && !l.veth()) throw not_available("a cut link needs two network namespaces: " + l.why_no_veth);
  const cpu_hogs hogs{p.get_or("hogs", 0), deadline};
  const std::string netns = l.server_namespace();
  const std::string host = l.server_host();
  peer::server_process server{
      [deadline, netns, host, lan](const peer::reporter& report) { serve(report, deadline, netns, host, lan); }};
  const int port = server.ports(deadline).at(0);
  if (l.veth()) net_proc::namespaces::enter(l.ns->b);                    // before any thread: they all talk from there
  const troupe::net::remote_address where{l.client_endpoint(port), {}};  // the relay's thread, if any, starts here

  register_types();
  const auto cfg = node_config(lan, "detection-client");
  troupe::actor_system sys{troupe::config{.workers = 1}};
  troupe::net::node node{sys, cfg};
  const auto echo = node.remote_actor(where, "echo", 10s);
  sample s = f == fault::none ? count_false_alarms(p, sys, node, echo, where, server, cfg, deadline)
                              : time_detection(p, sys, echo, server, l, cfg, deadline);
  s.add("veth", l.veth() ? 1 : 0, "bool");
  s.add("netem_jitter_ms", l.jitter_ms, "ms");
  s.add("relay_jitter_ms", l.relay_jitter_ms, "ms");
  return s;
}
