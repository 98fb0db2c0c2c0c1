// jitter_relay.hpp: a TCP relay in user space that holds every chunk it
// forwards for a random delay, as `tc qdisc ... netem delay D J` does on a
// link. It gives the jittery-link test of troupe::net
// (tests/net_liveness_test.cpp) and the detection benchmark
// (bench/detection) their jitter on kernels without sch_netem, where
// netem fails. No GoogleTest here, so that the benchmark can include it.
//
// It listens at an address (loopback by default); for every connection it
// accepts, it opens one to the target and forwards the bytes both ways.
// Each chunk read (one recv, up to 64 KiB) is delivered at max(the previous
// chunk's delivery in that direction, its read time + a delay drawn
// uniformly from [D - J, D + J], clamped at 0): the bytes keep their order,
// and a chunk drawn short waits behind one drawn long, as the segments of
// one TCP connection do behind netem. What it does not do that netem does:
// lose anything (over TCP a lost segment is only resent, and the relay's
// two connections cannot lose bytes, so there is no loss knob), or delay
// packet by packet (a chunk is whatever one read returned).
//
// An end of stream (FIN) is passed on in its place (shutdown of the write
// side, after the bytes before it); a reset or any other error on either
// side closes both connections at once; the client closing its side while
// the connection to the target is still being made closes both too. A
// connection to the target that fails closes the accepted one (its client
// sees it closed) and is counted (connect_failures(), last_error()).
//
// Costs: one thread, polling every connection; memory bounded by
// max_queued per direction of each connection (+ one read): a side is not
// read while its direction holds more, so its sender meets TCP's
// backpressure. stop() (and the destructor) ends the thread and closes
// every socket, the listening one too.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace net_proc {

/// Delays drawn as netem's `delay D J` draws them: uniform in [D - J, D + J]
/// (whole microseconds), clamped at 0. The same seed gives the same delays.
class jitter_draw {
 public:
  /// Throws std::invalid_argument when `delay` or `jitter` is negative.
  jitter_draw(std::chrono::microseconds delay, std::chrono::microseconds jitter, std::uint64_t seed)
      : rng_{seed}, dist_{checked(delay, jitter).count() - jitter.count(), delay.count() + jitter.count()} {}

  std::chrono::microseconds next() { return std::chrono::microseconds{std::max<std::int64_t>(0, dist_(rng_))}; }

 private:
  static std::chrono::microseconds checked(std::chrono::microseconds delay, std::chrono::microseconds jitter) {
    if (delay.count() < 0 || jitter.count() < 0)
      throw std::invalid_argument("jitter_relay: the delay (" + std::to_string(delay.count()) + " us) and jitter (" +
                                  std::to_string(jitter.count()) + " us) must not be negative");
    return delay;
  }

  std::mt19937_64 rng_;
  std::uniform_int_distribution<std::int64_t> dist_;
};

class jitter_relay {
 public:
  using clock = std::chrono::steady_clock;

  struct settings {
    std::string target_host;  ///< numeric IPv4 address
    int target_port = 0;
    std::chrono::microseconds delay{0};   ///< D
    std::chrono::microseconds jitter{0};  ///< J: delays in [D - J, D + J], at least 0
    std::uint64_t seed = 1;
    std::string listen_host = "127.0.0.1";          ///< numeric IPv4 address
    int listen_port = 0;                            ///< 0: a free port (port() tells which)
    std::size_t max_queued = std::size_t{4} << 20;  ///< bytes per direction of a connection
  };

  /// Listens and starts the thread. Throws std::invalid_argument for a bad
  /// setting (naming it), std::runtime_error when the listening socket
  /// cannot be made (naming the address and the system's reason).
  explicit jitter_relay(settings s) : s_{std::move(s)}, draw_{s_.delay, s_.jitter, s_.seed} {
    if (s_.max_queued == 0) throw std::invalid_argument("jitter_relay: max_queued must be above 0");
    target_ = address_of(s_.target_host, s_.target_port, "target", false);
    const sockaddr_in at = address_of(s_.listen_host, s_.listen_port, "listen address", true);
    const std::string where = s_.listen_host + ":" + std::to_string(s_.listen_port);
    lfd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lfd_ < 0) throw std::runtime_error("jitter_relay: socket(): " + std::string{std::strerror(errno)});
    const int on = 1;
    ::setsockopt(lfd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    socklen_t len = sizeof at;
    sockaddr_in bound{};
    if (::bind(lfd_, reinterpret_cast<const sockaddr*>(&at), sizeof at) != 0) fail_setup(errno, "bind " + where);
    if (::listen(lfd_, 64) != 0) fail_setup(errno, "listen at " + where);
    if (::getsockname(lfd_, reinterpret_cast<sockaddr*>(&bound), &len) != 0)
      fail_setup(errno, "getsockname of " + where);
    port_ = ntohs(bound.sin_port);
    wake_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_ < 0) fail_setup(errno, "make an eventfd");
    try {
      thread_ = std::thread{[this] { run(); }};
    } catch (const std::system_error& e) {
      fail_setup(e.code().value(), "start its thread");
    }
  }

  ~jitter_relay() { stop(); }
  jitter_relay(const jitter_relay&) = delete;
  jitter_relay& operator=(const jitter_relay&) = delete;

  /// Ends the thread and closes every connection and the listening socket
  /// (whatever was still queued is dropped). Idempotent; any thread.
  void stop() noexcept {
    std::call_once(stopped_, [this] {
      stopping_.store(true, std::memory_order_release);
      const std::uint64_t one = 1;
      [[maybe_unused]] const auto n = ::write(wake_, &one, sizeof one);
      if (thread_.joinable()) thread_.join();
      ::close(lfd_);
      ::close(wake_);
    });
  }

  /// The port it listens at (the one bound when settings::listen_port was 0).
  int port() const noexcept { return port_; }
  const std::string& host() const noexcept { return s_.listen_host; }

  /// Connections accepted so far.
  std::uint64_t accepted() const noexcept { return accepted_.load(std::memory_order_relaxed); }
  /// Connections to the target that could not be made.
  std::uint64_t connect_failures() const noexcept { return connect_failures_.load(std::memory_order_relaxed); }
  /// Connections being relayed now.
  std::size_t open() const noexcept { return open_.load(std::memory_order_relaxed); }
  /// The most bytes one direction of a connection held at once.
  std::size_t peak_queued() const noexcept { return peak_queued_.load(std::memory_order_relaxed); }
  /// The last error met after the start (a failed connect, accept), naming
  /// the address and the system's reason; "" when none.
  std::string last_error() const {
    std::lock_guard<std::mutex> g{err_mtx_};
    return last_error_;
  }

  static constexpr std::size_t read_size = std::size_t{64} << 10;

 private:
  struct chunk {
    clock::time_point due;
    std::vector<char> bytes;  // empty: the end of the stream
  };
  /// One direction of a connection: what was read from one side and waits
  /// to be written to the other.
  struct direction {
    std::deque<chunk> queue;
    std::size_t queued = 0;   // bytes in `queue`
    std::size_t written = 0;  // of queue.front()
    clock::time_point last_due{};
    bool read_done = false;   // the end of the stream was read
    bool write_done = false;  // ... and passed on
  };
  struct link {
    int down = -1;  // accepted (the client's side)
    int up = -1;    // to the target
    bool connecting = true;
    bool dead = false;
    direction to_up, to_down;
    ~link() {
      if (down >= 0) ::close(down);
      if (up >= 0) ::close(up);
    }
  };

  static sockaddr_in address_of(const std::string& host, int port, const char* what, bool port_zero_ok) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1)
      throw std::invalid_argument(std::string{"jitter_relay: the "} + what + " '" + host +
                                  "' is not a numeric IPv4 address");
    if (port < (port_zero_ok ? 0 : 1) || port > 65535)
      throw std::invalid_argument(std::string{"jitter_relay: the "} + what + " port " + std::to_string(port) +
                                  " is out of range");
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    return a;
  }

  /// `err`: errno, read before `what` was built (which may change it).
  [[noreturn]] void fail_setup(int err, const std::string& what) {
    const std::string why = std::strerror(err);
    if (lfd_ >= 0) ::close(lfd_);
    if (wake_ >= 0) ::close(wake_);
    throw std::runtime_error("jitter_relay: cannot " + what + ": " + why);
  }

  void note_error(const std::string& what) {
    std::lock_guard<std::mutex> g{err_mtx_};
    last_error_ = what;
  }

  std::string target_name() const { return s_.target_host + ":" + std::to_string(s_.target_port); }

  static void no_delay(int fd) {
    // The relay writes what it read at once: Nagle's algorithm would hold
    // small writes (heartbeats) back for the peer's delayed acknowledgement.
    const int on = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }

  // ---------------------------------------------------------- the thread

  void run() {
    std::vector<std::unique_ptr<link>> links;
    std::vector<char> buf(read_size);
    std::vector<pollfd> fds;
    while (!stopping_.load(std::memory_order_acquire)) {
      const auto now = clock::now();
      for (auto& l : links) deliver(*l, now);
      std::erase_if(links, [](const std::unique_ptr<link>& l) { return l->dead; });
      open_.store(links.size(), std::memory_order_relaxed);

      fds.clear();
      fds.push_back({wake_, POLLIN, 0});
      fds.push_back({lfd_, POLLIN, 0});
      std::optional<clock::duration> wait;
      for (auto& l : links) {
        short down = 0, up = 0;
        if (!l->to_up.read_done && l->to_up.queued < s_.max_queued) down |= POLLIN;
        if (l->connecting) up |= POLLOUT;
        else if (!l->to_down.read_done && l->to_down.queued < s_.max_queued) up |= POLLIN;
        // A chunk due but not written (the socket's buffer is full): wait
        // for room; a chunk not due yet: wake when it is.
        const auto wants = [&](const direction& d, short& ev) {
          if (d.queue.empty()) return;
          if (d.queue.front().due <= now) ev |= POLLOUT;
          else if (!wait || d.queue.front().due - now < *wait) wait = d.queue.front().due - now;
        };
        wants(l->to_down, down);
        if (!l->connecting) wants(l->to_up, up);
        // An fd with no interest is left out (-1): a hang-up reported on a
        // side not being read would otherwise wake the loop at once, again
        // and again, until that direction drains.
        fds.push_back({down != 0 ? l->down : -1, down, 0});
        fds.push_back({up != 0 ? l->up : -1, up, 0});
      }
      timespec ts{};
      if (wait) {
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(*wait).count();
        ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
        ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
      }
      if (::ppoll(fds.data(), fds.size(), wait ? &ts : nullptr, nullptr) < 0) {
        if (errno == EINTR) continue;
        note_error("jitter_relay: poll: " + std::string{std::strerror(errno)});
        break;
      }
      if ((fds[0].revents & POLLIN) != 0) {
        std::uint64_t v = 0;
        [[maybe_unused]] const auto n = ::read(wake_, &v, sizeof v);
      }
      const auto read_at = clock::now();
      for (std::size_t i = 0; i < links.size(); ++i) {
        link& l = *links[i];
        if (l.connecting && fds[3 + 2 * i].revents != 0) finish_connect(l);
        // Read only a side that was polled for reading (a hang-up also
        // wakes a side polled for room only: its next write tells).
        const auto readable = [&](std::size_t at) {
          return (fds[at].events & POLLIN) != 0 && (fds[at].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
        };
        if (readable(2 + 2 * i) && !l.dead) read_side(l, l.down, l.to_up, buf, read_at);
        if (!l.connecting && readable(3 + 2 * i) && !l.dead) read_side(l, l.up, l.to_down, buf, read_at);
      }
      if ((fds[1].revents & POLLIN) != 0) accept_all(links);
    }
    links.clear();  // closes every connection
    open_.store(0, std::memory_order_relaxed);
  }

  void accept_all(std::vector<std::unique_ptr<link>>& links) {
    for (;;) {
      const int fd = ::accept4(lfd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
          note_error("jitter_relay: accept at " + s_.listen_host + ":" + std::to_string(port_) + ": " +
                     std::strerror(errno));
        return;
      }
      accepted_.fetch_add(1, std::memory_order_relaxed);
      auto l = std::make_unique<link>();
      l->down = fd;
      no_delay(fd);
      l->up = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (l->up < 0) {
        connect_failed(errno);
        continue;  // `l` closes the accepted connection
      }
      no_delay(l->up);
      if (::connect(l->up, reinterpret_cast<const sockaddr*>(&target_), sizeof target_) == 0) {
        l->connecting = false;
      } else if (errno != EINPROGRESS) {
        connect_failed(errno);
        continue;
      }
      links.push_back(std::move(l));
    }
  }

  void connect_failed(int err) {
    connect_failures_.fetch_add(1, std::memory_order_relaxed);
    note_error("jitter_relay: cannot connect to " + target_name() + ": " + std::strerror(err));
  }

  void finish_connect(link& l) {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(l.up, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
      connect_failed(err);
      l.dead = true;
      return;
    }
    l.connecting = false;
  }

  /// One read from `fd` into `d`, due after its drawn delay.
  void read_side(link& l, int fd, direction& d, std::vector<char>& buf, clock::time_point now) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) l.dead = true;  // a reset: both go
      return;
    }
    if (n == 0 && l.connecting) {  // the client gave up before the target answered
      l.dead = true;
      return;
    }
    const auto due = std::max(d.last_due, now + draw_.next());
    d.last_due = due;
    d.queue.push_back(chunk{due, std::vector<char>(buf.data(), buf.data() + n)});
    d.queued += static_cast<std::size_t>(n);
    d.read_done = n == 0;
    if (d.queued > peak_queued_.load(std::memory_order_relaxed))
      peak_queued_.store(d.queued, std::memory_order_relaxed);
  }

  void deliver(link& l, clock::time_point now) {
    if (l.dead) return;
    if (!l.connecting) pump(l, l.up, l.to_up, now);
    if (!l.dead) pump(l, l.down, l.to_down, now);
    if (l.to_up.write_done && l.to_down.write_done) l.dead = true;  // both ends closed: done
  }

  /// Writes the chunks of `d` that are due to `fd`, until the socket's
  /// buffer is full.
  static void pump(link& l, int fd, direction& d, clock::time_point now) {
    while (!d.queue.empty() && d.queue.front().due <= now) {
      chunk& c = d.queue.front();
      if (c.bytes.empty()) {  // the end of the stream, after every byte before it
        ::shutdown(fd, SHUT_WR);
        d.write_done = true;
        d.queue.pop_front();
        continue;
      }
      const ssize_t n = ::send(fd, c.bytes.data() + d.written, c.bytes.size() - d.written, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) l.dead = true;
        return;
      }
      d.written += static_cast<std::size_t>(n);
      if (d.written < c.bytes.size()) return;
      d.queued -= c.bytes.size();
      d.written = 0;
      d.queue.pop_front();
    }
  }

  settings s_;
  jitter_draw draw_;  // the relay's thread only
  sockaddr_in target_{};
  int lfd_ = -1;
  int wake_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::once_flag stopped_;
  std::atomic<std::uint64_t> accepted_{0}, connect_failures_{0};
  std::atomic<std::size_t> open_{0}, peak_queued_{0};
  mutable std::mutex err_mtx_;
  std::string last_error_;
};

}  // namespace net_proc
