// child_process.hpp: a child process for the multi-process tests and
// benchmarks (a program killed and run again, a server): started with
// posix_spawn, its output to files, killed and reaped when it goes; free
// ports for it. No GoogleTest here.
#pragma once

#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace child_process {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

inline std::string slurp(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  return {std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
}

/// `n` distinct free TCP ports of 127.0.0.1, for a server the test starts
/// (all held open until every one is picked, then let go: another process
/// could take one in between, which a rerun fixes).
inline std::vector<int> free_ports(std::size_t n) {
  std::vector<int> fds, ports;
  for (std::size_t i = 0; i < n; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error{"free_ports: no free port on 127.0.0.1"};
    fds.push_back(fd);
    ports.push_back(ntohs(a.sin_port));
  }
  for (const int fd : fds) ::close(fd);
  return ports;
}

/// A child process: stdout and stderr to files; killed and reaped when
/// destroyed while it runs.
class process {
 public:
  process(std::vector<std::string> args, const fs::path& out, const fs::path& err) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) throw std::runtime_error{std::string{"cannot start "} + argv[0] + ": " + std::strerror(rc)};
  }
  ~process() { kill(SIGKILL); }
  process(const process&) = delete;
  process& operator=(const process&) = delete;

  void kill(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    ::waitpid(pid_, &status_, 0);
    pid_ = -1;
  }
  /// Sends `sig` and returns (SIGSTOP, SIGCONT: kill() would wait for an exit).
  void signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  /// The exit code once it has exited within `limit`; -100 - the signal if
  /// a signal ended it; -2 if it still ran (then it is killed).
  int wait(std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (pid_ > 0) {
      if (::waitpid(pid_, &status_, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      if (std::chrono::steady_clock::now() > until) {
        kill(SIGKILL);
        return -2;
      }
      std::this_thread::sleep_for(2ms);
    }
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : -100 - WTERMSIG(status_);
  }
  bool running() {
    if (pid_ > 0 && ::waitpid(pid_, &status_, WNOHANG) == pid_) pid_ = -1;
    return pid_ > 0;
  }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
};

/// How kill_and_rerun went: the last run's exit code (as process::wait says)
/// and how many runs were killed.
struct rerun_result {
  int code = -2;
  int kills = 0;
};

/// Runs a program again and again, as a crash test does: `start` makes a
/// new process each time; the first `kills` runs are killed with SIGKILL
/// after a random pause of `from` to `to` (if they still run); the next run
/// is waited for, up to `limit`. The pauses come from `seed`.
inline rerun_result kill_and_rerun(const std::function<std::unique_ptr<process>()>& start, int kills,
                                   std::chrono::milliseconds from, std::chrono::milliseconds to,
                                   std::chrono::milliseconds limit, unsigned seed) {
  std::mt19937 rng{seed};
  rerun_result r;
  for (int run = 0; run < kills + 1; ++run) {
    auto p = start();
    if (run < kills) {
      std::this_thread::sleep_for(
          std::chrono::milliseconds{std::uniform_int_distribution<std::int64_t>{from.count(), to.count()}(rng)});
      if (p->running()) {
        p->kill(SIGKILL);
        ++r.kills;
        continue;
      }
    }
    r.code = p->wait(limit);
    break;
  }
  return r;
}

}  // namespace child_process
