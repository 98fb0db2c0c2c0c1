// net_process_support.hpp: what the multi-process tests of troupe::net share
// (net_process_test.cpp, net_liveness_test.cpp, one binary whose main is in
// net_process_test.cpp): the message types, a node configuration for quick
// failure detection, a server child process, a watcher of failures, and two
// network namespaces joined by a veth pair. No test here.
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "net_namespaces.hpp"
#include "troupe/net/node.hpp"

namespace net_proc {

using namespace std::chrono_literals;
using troupe::actor;
using troupe::behavior;
using troupe::errc;
using troupe::error;
using troupe::event_actor;
namespace net = troupe::net;

struct never_atom {};
struct count_atom {};
struct add_atom {};
struct quit_atom {};
struct mark_atom {};
using adder = troupe::typed_actor<std::int64_t(add_atom, std::int64_t, std::int64_t)>;

inline void register_types() {
  static const bool once = [] {
    net::add_type<never_atom>("never_atom");
    net::add_type<count_atom>("count_atom");
    net::add_type<add_atom>("proc.add_atom");
    net::add_type<quit_atom>("proc.quit_atom");
    net::add_type<mark_atom>("proc.mark_atom");
    net::add_message<mark_atom, std::int64_t>();
    net::add_message<quit_atom>();
    net::add_message<never_atom>();
    net::add_message<count_atom>();
    net::add_message<std::int64_t>();
    net::add_message<std::int64_t, std::uint64_t>();
    return true;
  }();
  (void)once;
}

/// Plaintext, and failure detection in about a second: the lan liveness
/// profile, with more room for a machine loaded by parallel test runs
/// (every process of a test uses the same settings, as nodes must).
inline net::node_config quick(const char* name) {
  auto c = net::node_config::lan();
  c.acceptable_heartbeat_pause = 500ms;
  c.heartbeat_timeout = 2s;
  c.security = net::security::plaintext;
  c.name = name;
  return c;
}

/// A child process running a node with two published actors: "counter"
/// (counts the int64 it gets; count_atom answers with the count and the
/// node's incarnation), "sleeper" (never answers never_atom) and "tally"
/// (counts sequence numbers, and how many came twice).
/// Plaintext with the default liveness profile.
inline net::node_config standard(const char* name) {
  net::node_config c;
  c.security = net::security::plaintext;
  c.name = name;
  return c;
}

/// The client of the liveness tests (net_liveness_test.cpp), in a child
/// process: spec "<endpoint> <seconds> <lan|standard>".
int liveness_client_main(const char* spec, int out);
/// A member of the mesh test (net_scale_test.cpp), in a child process:
/// `dir` is the directory the test and its members share.
int mesh_child_main(const char* dir, int out);

class child {
 public:
  /// A server child: `endpoint` is where it listens ("tcp://127.0.0.1:*"
  /// picks a port); `prefix` runs it through another command (ip netns exec).
  explicit child(const std::string& endpoint, const std::vector<std::string>& prefix = {})
      : child{"TROUPE_NET_TEST_CHILD=" + endpoint, prefix, 0} {
    endpoint_ = read_line(std::chrono::seconds{20});
    if (endpoint_.empty() || endpoint_.rfind("error", 0) == 0) {
      kill_now();
      throw std::runtime_error("the child did not report its endpoint: '" + endpoint_ + "'");
    }
  }
  /// A child in the mode `var` (NAME=value) selects (see main).
  child(const std::string& var, const std::vector<std::string>& prefix, int) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe");
    // The child runs this test binary again (see main): a fresh process,
    // not a fork of this multi-threaded one.
    std::string var_mode = var;
    std::string var_fd = "TROUPE_NET_TEST_FD=" + std::to_string(fds[1]);
    std::vector<char*> env;
    for (char** e = environ; *e != nullptr; ++e) env.push_back(*e);
    env.push_back(var_mode.data());
    env.push_back(var_fd.data());
    env.push_back(nullptr);
    std::vector<std::string> words = prefix;
    words.emplace_back("/proc/self/exe");
    if (!prefix.empty()) {  // the program to run after the prefix: this binary, by its real path
      char path[4096] = {};
      auto n = readlink("/proc/self/exe", path, sizeof path - 1);
      if (n > 0) words.back() = std::string{path, static_cast<std::size_t>(n)};
    }
    std::vector<char*> args;
    for (auto& w : words) args.push_back(w.data());
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      close(fds[0]);
      execvpe(args[0], args.data(), env.data());
      _exit(127);
    }
    close(fds[1]);
    fd_ = fds[0];
  }

  /// The next line the child wrote (without the newline); "" at EOF or
  /// after `timeout`.
  std::string read_line(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        auto line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0 || fd_ < 0) return {};
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char tmp[256];
      auto n = read(fd_, tmp, sizeof tmp);
      if (n <= 0) {
        close(fd_);
        fd_ = -1;
        return {};
      }
      buf_.append(tmp, static_cast<std::size_t>(n));
    }
  }
  ~child() { kill_now(); }
  child(const child&) = delete;
  child& operator=(const child&) = delete;

  const std::string& endpoint() const { return endpoint_; }
  void signal(int sig) const { ::kill(pid_, sig); }
  void kill_now() {
    if (fd_ >= 0) {
      close(fd_);
      fd_ = -1;
    }
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  /// `spec`: the endpoint, and optionally " standard": the default
  /// liveness profile instead of quick()'s.
  static void run(const std::string& spec, int out) {
    register_types();
    troupe::actor_system sys{troupe::config{.workers = 1}};
    const auto space = spec.find(' ');
    const std::string endpoint = spec.substr(0, space);
    net::node n{sys, space == std::string::npos ? quick("child") : standard("child")};
    std::string bound;
    try {
      bound = n.listen(endpoint);
    } catch (const std::exception& e) {
      bound = std::string{"error: "} + e.what();
    }
    const auto inc = n.incarnation();
    auto counted = std::make_shared<std::atomic<std::int64_t>>(0);
    n.publish(sys.spawn([counted, inc](event_actor&) {
      return behavior{[counted](std::int64_t) { ++*counted; },
                      [counted, inc](count_atom) { return std::make_tuple(counted->load(), inc); }};
    }),
              "counter");
    adder add = sys.spawn([](event_actor&) -> adder::behavior_type {
      return {[](add_atom, std::int64_t a, std::int64_t b) { return a + b; }};
    });
    n.publish(add, "adder");
    n.publish(sys.spawn([](event_actor& self) {
      return behavior{[&self](quit_atom) { self.quit(error{errc::user_shutdown, "asked to"}); }};
    }),
              "mortal");
    n.publish(sys.spawn([](event_actor& self) {
      return behavior{[&self, kept = std::vector<troupe::response_promise>{}](never_atom) mutable {
        kept.push_back(self.make_response_promise());
      }};
    }),
              "sleeper");
    // "tally": (mark_atom, n) answers n and notes it; count_atom answers
    // (distinct marks, marks seen more than once): nothing may arrive twice.
    n.publish(sys.spawn([](event_actor&) {
      struct marks {
        std::set<std::int64_t> seen;
        std::uint64_t twice = 0;
      };
      auto m = std::make_shared<marks>();
      return behavior{[m](mark_atom, std::int64_t k) {
                        if (!m->seen.insert(k).second) ++m->twice;
                        return k;
                      },
                      [m](count_atom) { return std::make_tuple(static_cast<std::int64_t>(m->seen.size()), m->twice); }};
    }),
              "tally");
    bound += "\n";
    [[maybe_unused]] auto w = write(out, bound.data(), bound.size());
    close(out);
    for (;;) pause();  // until killed
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buf_;
  std::string endpoint_;

 public:
  /// In the child process (see main).
  static int main_of_child(const char* endpoint, int out) {
    // Never outlive the test run by long. The longest run that uses a
    // server child is the jittery-link test with TROUPE_NET_LONG=1: 60 s of
    // requests after its set-up (an alarm of 60 s ended the server before
    // the client was done).
    alarm(150);
    run(endpoint, out);
    return 0;
  }
};

/// What one watcher saw: the down message of `target` and the error of a
/// request to `sleeper` that is never answered, with their delays.
struct failure_watch {
  std::promise<error> down;
  std::promise<error> request;
};

inline void watch(troupe::actor_system& sys, failure_watch& w, const actor& target, const actor& sleeper) {
  std::promise<void> armed;
  sys.spawn(
      [&w, &armed](event_actor& self, actor t, actor s) {
        self.set_down_handler([&w](troupe::down_msg& d) { w.down.set_value(d.reason); });
        self.monitor(t);
        self.request(s, 60s, never_atom{}).then([] {}, [&w](error& e) { w.request.set_value(e); });
        armed.set_value();
        return behavior{[](int) {}};
      },
      target, sleeper);
  armed.get_future().wait();
}

/// A parent node in this process watching a server child: a monitor on its
/// "counter" and a request to its "sleeper" that is never answered (see
/// watch), both in place when the constructor returns.
struct watched_child {
  bool registered = (register_types(), true);
  child c{"tcp://127.0.0.1:*"};
  troupe::actor_system sys{troupe::config{.workers = 2}};
  net::node n{sys, quick("parent")};
  actor counter = n.remote_actor({c.endpoint(), {}}, "counter", 5s);
  actor sleeper = n.remote_actor({c.endpoint(), {}}, "sleeper", 5s);
  failure_watch w;
  watched_child() {
    watch(sys, w, counter, sleeper);
    std::this_thread::sleep_for(50ms);  // let the request reach the child
  }
  /// The reasons the monitor and the request got, waiting up to `limit`
  /// for each (a test failure and two empty errors if one does not come).
  std::pair<error, error> failure(std::chrono::seconds limit) {
    auto down = w.down.get_future();
    auto req = w.request.get_future();
    if (down.wait_for(limit) != std::future_status::ready || req.wait_for(limit) != std::future_status::ready) {
      ADD_FAILURE() << "no failure reported within " << limit.count() << " s";
      return {};
    }
    return {down.get(), req.get()};
  }
};

}  // namespace net_proc
