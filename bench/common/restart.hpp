// restart.hpp: what the benchmarks that kill a job and start it again share:
// forked processes that die with the benchmark, one of which reports a line
// over a pipe, and the test for a completed checkpoint in a directory.
#pragma once

#include <poll.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

namespace bench {

using restart_clock = std::chrono::steady_clock;

/// steady_clock in ns: one clock for the parent and its forked children.
inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(restart_clock::now().time_since_epoch()).count();
}

/// A forked child, killed (SIGKILL) and reaped when it goes.
struct process {
  pid_t pid = -1;
  process() = default;
  process(const process&) = delete;
  process& operator=(const process&) = delete;
  ~process() {
    if (pid > 0) kill_now();
  }
  void kill_now() {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
};

/// In a child: reports "error <what>" on `fd` and exits.
[[noreturn]] inline void child_fails(int fd, const std::string& what) {
  const std::string line = "error " + what + "\n";
  (void)!::write(fd, line.data(), line.size());
  std::_Exit(1);
}

/// Reads one line from `fd` before `deadline` ("" on time out or end).
inline std::string read_line(int fd, restart_clock::time_point deadline) {
  std::string line;
  while (restart_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char c = 0;
    if (::read(fd, &c, 1) != 1) break;
    if (c == '\n') return line;
    line += c;
  }
  return line;
}

/// Forks a child into `p` that dies with the benchmark and runs `body()`,
/// then ends (exit status 0; 1 after an exception).
template <class Body>
void fork_child(process& p, Body body) {
  p.pid = ::fork();
  if (p.pid < 0) throw std::runtime_error("fork failed");
  if (p.pid != 0) return;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  try {
    body();
  } catch (...) {
    std::_Exit(1);
  }
  std::_Exit(0);
}

/// Forks a child into `p` that dies with the benchmark and runs
/// `body(fd)`: it returns the one line to report (it may also report a
/// failure from any of its threads with child_fails(fd, what)), and the
/// child ends at once, without an orderly end. Returns that line; throws
/// with the child's error, or when nothing came before `deadline`.
template <class Body>
std::string fork_and_read(process& p, Body body, restart_clock::time_point deadline) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  p.pid = ::fork();
  if (p.pid < 0) throw std::runtime_error("fork failed");
  if (p.pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::close(fds[0]);
    try {
      const std::string line = body(fds[1]) + "\n";
      (void)!::write(fds[1], line.data(), line.size());
    } catch (const std::exception& e) {
      child_fails(fds[1], e.what());
    }
    std::_Exit(0);
  }
  ::close(fds[1]);
  const auto line = read_line(fds[0], deadline);
  ::close(fds[0]);
  if (line.rfind("error ", 0) == 0) throw std::runtime_error("the restarted run failed: " + line.substr(6));
  if (line.empty()) throw std::runtime_error("the restarted run reported nothing");
  return line;
}

/// Whether `dir` holds a completed checkpoint file.
inline bool has_checkpoint(const std::string& dir) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".troupe") return true;
  return false;
}

/// Waits until `dir` holds a completed checkpoint (throws after
/// `deadline`), then kills `p`; returns the time of the kill (now_ns).
inline std::int64_t kill_after_checkpoint(process& p, const std::string& dir, restart_clock::time_point deadline) {
  while (!has_checkpoint(dir)) {
    if (restart_clock::now() > deadline) throw std::runtime_error("the first run completed no checkpoint");
    std::this_thread::sleep_for(std::chrono::milliseconds{5});
  }
  const auto killed = now_ns();
  p.kill_now();
  return killed;
}

}  // namespace bench
