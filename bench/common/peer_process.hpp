// The second process of the two-process (remote_*) benchmarks.
//
// The harness runs every implementation in a forked child; a remote
// implementation forks once more and runs its server side in that grandchild
// (the "server process"), then plays the client side itself and times the
// measured region there. The fork has to come first, before the
// implementation creates any thread, actor system or ZeroMQ context: fork()
// copies only the calling thread.
//
// Ports: the server binds an ephemeral port on 127.0.0.1 (port 0) and
// reports the port number back through a pipe, so runs never collide on a
// port and nothing has to be guessed.
//
// Nothing may hang or leak a process: the server dies with the thread that
// forked it (PR_SET_PDEATHSIG), every wait below has a deadline (time_limit
// after the implementation started), and a server_process that is destroyed
// before its server was reaped (an exception on the client side) kills it
// with SIGKILL and reaps it.
//
// Pipe protocol (server -> client, text lines): "ports <p1> [<p2> ...]" once
// the server listens; "error <what>" when the server's function throws.
#pragma once

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace bench::peer {

using clock = std::chrono::steady_clock;

/// How long one run may take by default, both processes and all of their
/// waits: a stuck run fails with the name of the wait it was stuck in, before
/// the harness's timeout (spec::timeout_s, 120 s by default) kills it without
/// one. A benchmark with longer runs passes a longer limit and raises its
/// spec::timeout_s to match.
constexpr std::chrono::seconds time_limit{100};

/// The deadline of a run that starts now. steady_clock is CLOCK_MONOTONIC,
/// one clock for the whole machine, so the server process can use it too.
inline clock::time_point deadline_from_now(std::chrono::seconds limit = time_limit) { return clock::now() + limit; }

/// Throws std::runtime_error("<what>: deadline passed") once `deadline` is over.
inline void check_deadline(clock::time_point deadline, const std::string& what) {
  if (clock::now() >= deadline) throw std::runtime_error(what + ": deadline passed");
}

/// The server process's end of the pipe.
class reporter {
 public:
  explicit reporter(int fd) : fd_(fd) {}

  /// Tells the client the bound ports (once, as soon as the server listens).
  void ports(std::initializer_list<int> ps) const {
    std::string line = "ports";
    for (int p : ps) {
      line += ' ';
      line += std::to_string(p);
    }
    write_line(line);
  }

  /// Tells the client why the server failed.
  void error(std::string what) const {
    for (auto& c : what)
      if (c == '\n') c = ' ';
    write_line("error " + what);
  }

 private:
  void write_line(std::string line) const {
    line += '\n';
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
      auto n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the client is gone; PR_SET_PDEATHSIG ends us
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  }

  int fd_;
};

/// Forks the server process and owns it until it is reaped.
class server_process {
 public:
  /// Forks; the server process runs serve(const reporter&) and _exits with
  /// 0 when it returns, 1 when it throws (after reporting the error). It
  /// never returns into the caller's code (no harness code runs twice).
  template <class Serve>
  explicit server_process(Serve&& serve) {
    std::fflush(stdout);
    std::fflush(stderr);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string{"pipe2: "} + std::strerror(errno));
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      throw std::runtime_error(std::string{"fork: "} + std::strerror(errno));
    }
    if (pid == 0) {
      ::close(fds[0]);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // do not outlive the client
      if (::getppid() != parent) ::_exit(4);
      int code = 0;
      const reporter report{fds[1]};
      try {
        serve(report);
      } catch (const std::exception& e) {
        report.error(e.what());
        code = 1;
      } catch (...) {
        report.error("unknown exception");
        code = 1;
      }
      ::close(fds[1]);
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(code);
    }
    ::close(fds[1]);
    pid_ = pid;
    fd_ = fds[0];
  }

  server_process(const server_process&) = delete;
  server_process& operator=(const server_process&) = delete;

  ~server_process() { kill(); }

  /// The ports the server reported. Throws (and kills the server) when it
  /// failed before it listened or did not report by `deadline`.
  std::vector<int> ports(clock::time_point deadline) {
    while (text_.find('\n') == std::string::npos) {
      if (!read_some(deadline)) {
        const bool timed_out = clock::now() >= deadline;
        kill();
        throw std::runtime_error(timed_out ? "server process: no port reported by the deadline"
                                           : "server process failed to start: " + what_went_wrong());
      }
    }
    auto line = text_.substr(0, text_.find('\n'));
    if (line.rfind("ports ", 0) != 0) {
      kill();
      throw std::runtime_error("server process failed to start: " + what_went_wrong());
    }
    std::istringstream in{line.substr(6)};
    std::vector<int> ps;
    for (int p; in >> p;) ps.push_back(p);
    return ps;
  }

  /// Waits until the server has exited by itself and reaps it. Throws when
  /// it has not exited by `deadline` (it is killed then) or when it failed:
  /// an "error" line, a non-zero exit status or a signal.
  void join(clock::time_point deadline) {
    while (read_some(deadline)) {
    }  // until EOF: the server closes its end right before it exits
    int status = 0;
    for (;;) {
      auto r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) break;
      if (r < 0 && errno != EINTR) {
        pid_ = -1;
        throw std::runtime_error(std::string{"waitpid: "} + std::strerror(errno));
      }
      if (clock::now() >= deadline) {
        kill();
        throw std::runtime_error("server process did not exit by the deadline (killed)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    pid_ = -1;
    close_pipe();
    status_ = status;
    if (text_.find("\nerror ") != std::string::npos || text_.rfind("error ", 0) == 0 || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
      throw std::runtime_error("server process failed: " + what_went_wrong());
  }

  /// Sends `sig` to the server process, when it has not been reaped yet (the
  /// detection benchmark kills or stops it: kill() reaps it later).
  void signal(int sig) const noexcept {
    if (pid_ > 0) ::kill(pid_, sig);
  }

  /// SIGKILL and reap, when the server has not been reaped yet.
  void kill() noexcept {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      status_ = status;
      pid_ = -1;
    }
    close_pipe();
  }

 private:
  /// Appends what the server wrote; false at EOF or when `deadline` passed.
  bool read_some(clock::time_point deadline) {
    if (fd_ < 0) return false;
    char buf[512];
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
      if (left <= 0) return false;
      pollfd pfd{fd_, POLLIN, 0};
      int rc = ::poll(&pfd, 1, static_cast<int>(left < 1000 ? left : 1000));
      if (rc < 0 && errno != EINTR) return false;
      if (rc <= 0) continue;
      auto n = ::read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      text_.append(buf, static_cast<std::size_t>(n));
      return true;
    }
  }

  void close_pipe() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  /// The server's error line, else how it ended.
  std::string what_went_wrong() {
    auto at = text_.rfind("error ");
    if (at != std::string::npos && (at == 0 || text_[at - 1] == '\n')) {
      auto end = text_.find('\n', at);
      return text_.substr(at + 6, end == std::string::npos ? std::string::npos : end - at - 6);
    }
    if (pid_ > 0) return "no report";
    if (WIFSIGNALED(status_)) return "killed by signal " + std::to_string(WTERMSIG(status_));
    if (WIFEXITED(status_)) return "exit status " + std::to_string(WEXITSTATUS(status_));
    return "no report";
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  int status_ = 0;
  std::string text_;  // what the server wrote so far
};

}  // namespace bench::peer
