// The jittery TCP relay of the troupe::net liveness test and the detection
// benchmark (jitter_relay.hpp): its delays are drawn like netem's, bytes
// cross intact and in order both ways whatever the delays, a reader that
// stops holds the sender back with bounded memory in between, a stopped
// relay closes everything, and errors name the address and the reason.
// Loopback only; one process.
#include "jitter_relay.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using net_proc::jitter_draw;
using net_proc::jitter_relay;

namespace {

/// A socket closed on scope exit.
struct fd_guard {
  int fd = -1;
  explicit fd_guard(int f = -1) : fd{f} {}
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  fd_guard(fd_guard&& o) noexcept : fd{std::exchange(o.fd, -1)} {}
};

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  return a;
}

/// A listening socket on a free loopback port.
struct listener {
  fd_guard s{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  int port = 0;
  listener() {
    sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    if (::bind(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s.fd, 8) != 0 ||
        ::getsockname(s.fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error(std::string{"listener: "} + std::strerror(errno));
    port = ntohs(a.sin_port);
  }
  /// The next connection, or -1 after 10 s.
  fd_guard accept() const {
    pollfd p{s.fd, POLLIN, 0};
    if (::poll(&p, 1, 10'000) != 1) return fd_guard{};
    return fd_guard{::accept4(s.fd, nullptr, nullptr, SOCK_CLOEXEC)};
  }
};

/// Blocking reads and writes on `fd` give up after 30 s (SO_RCVTIMEO,
/// SO_SNDTIMEO): no test hangs.
void set_timeouts(int fd) {
  const timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/// A blocking connection to the loopback `port` (-1 when refused), with
/// set_timeouts.
fd_guard connect_to(int port) {
  fd_guard c{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  const sockaddr_in a = loopback(port);
  if (::connect(c.fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) return fd_guard{};
  set_timeouts(c.fd);
  return c;
}

/// The bytes one side sends: `n` pseudo-random bytes from `seed`.
std::vector<char> stream_of(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::vector<char> v(n);
  for (auto& c : v) c = static_cast<char>(rng() & 0xff);
  return v;
}

/// Writes `bytes` to `fd` in writes of 1 byte to 16 KiB, with a pause now
/// and then (so the relay reads many chunks of many sizes), then ends the
/// stream (shutdown of the write side). False when a write failed.
bool send_in_pieces(int fd, const std::vector<char>& bytes, std::uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::size_t at = 0;
  for (int i = 0; at < bytes.size(); ++i) {
    const std::size_t n = std::min<std::size_t>(bytes.size() - at, 1 + rng() % (16 << 10));
    const ssize_t w = ::send(fd, bytes.data() + at, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    at += static_cast<std::size_t>(w);
    if (i % 32 == 0) std::this_thread::sleep_for(200us);
  }
  return ::shutdown(fd, SHUT_WR) == 0;
}

/// Everything `fd` delivers until the end of the stream (or an error, or
/// `limit` bytes).
std::vector<char> read_to_end(int fd, std::size_t limit) {
  std::vector<char> got;
  char buf[8192];
  while (got.size() < limit) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.insert(got.end(), buf, buf + n);
  }
  return got;
}

/// Whether the peer of `fd` closed it (end of stream or a reset) within 10 s.
bool closed_by_peer(int fd) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  char buf[256];
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) != 1) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return true;
  }
  return false;
}

jitter_relay::settings to(int port, std::chrono::microseconds delay, std::chrono::microseconds jitter) {
  jitter_relay::settings s;
  s.target_host = "127.0.0.1";
  s.target_port = port;
  s.delay = delay;
  s.jitter = jitter;
  s.seed = 33;
  return s;
}

/// A relay to a loopback target, and one connection through it: `client`
/// (to the relay) and `server` (the target's end), -1 when not made.
struct relayed {
  listener target;
  jitter_relay relay;
  fd_guard client, server;
  relayed(std::chrono::microseconds delay, std::chrono::microseconds jitter,
          std::size_t max_queued = jitter_relay::settings{}.max_queued)
      : relay{queue_of(to(target.port, delay, jitter), max_queued)},
        client{connect_to(relay.port())},
        server{target.accept()} {
    if (server.fd >= 0) set_timeouts(server.fd);
  }
  static jitter_relay::settings queue_of(jitter_relay::settings s, std::size_t max_queued) {
    s.max_queued = max_queued;
    return s;
  }
};

}  // namespace

TEST(jitter_relay, delays_are_drawn_like_netem_in_the_band_clamped_at_zero_and_repeat_with_the_seed) {
  jitter_draw a{10ms, 10ms, 7}, b{10ms, 10ms, 7}, other{10ms, 10ms, 8};
  int low = 0, high = 0, differ = 0;
  for (int i = 0; i < 10000; ++i) {
    const auto d = a.next();
    EXPECT_GE(d.count(), 0);
    EXPECT_LE(d, 20ms);
    low += d < 5ms ? 1 : 0;
    high += d > 15ms ? 1 : 0;
    EXPECT_EQ(b.next(), d) << "draw " << i;
    differ += other.next() != d ? 1 : 0;
  }
  EXPECT_GT(low, 0);  // the whole band is used, not only its middle
  EXPECT_GT(high, 0);
  EXPECT_GT(differ, 0);
  jitter_draw clamped{2ms, 5ms, 1};  // [-3 ms, 7 ms]: below 0 is 0
  int zero = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto d = clamped.next();
    EXPECT_GE(d.count(), 0);
    EXPECT_LE(d, 7ms);
    zero += d.count() == 0 ? 1 : 0;
  }
  EXPECT_GT(zero, 0);
  EXPECT_THROW((jitter_draw{-1ms, 0ms, 1}), std::invalid_argument);
  EXPECT_THROW((jitter_draw{1ms, -1ms, 1}), std::invalid_argument);
}

TEST(jitter_relay, bytes_cross_intact_and_in_order_both_ways_across_many_chunks) {
  // Delays of 0-2 ms per chunk: without the ordering rule, a chunk drawn
  // short would overtake the one before it.
  relayed r{1ms, 1ms};
  ASSERT_GE(r.client.fd, 0);
  ASSERT_GE(r.server.fd, 0) << "the relay did not connect to the target";
  const int client = r.client.fd, server = r.server.fd;
  constexpr std::size_t n = std::size_t{3} << 20;  // 3 MiB each way: at least 48 reads of 64 KiB each way
  const auto up = stream_of(n, 1), down = stream_of(n, 2);
  bool up_sent = false, down_sent = false;
  std::vector<char> got_up, got_down;
  {
    std::jthread a{[&] { up_sent = send_in_pieces(client, up, 11); }};
    std::jthread b{[&] { down_sent = send_in_pieces(server, down, 12); }};
    std::jthread c{[&] { got_up = read_to_end(server, 2 * n); }};
    got_down = read_to_end(client, 2 * n);
  }
  EXPECT_TRUE(up_sent);
  EXPECT_TRUE(down_sent);
  ASSERT_EQ(got_up.size(), n) << "client to target: bytes missing or extra (the end of the stream passed on?)";
  ASSERT_EQ(got_down.size(), n) << "target to client: bytes missing or extra";
  EXPECT_TRUE(got_up == up) << "client to target: bytes changed or out of order";
  EXPECT_TRUE(got_down == down) << "target to client: bytes changed or out of order";
  EXPECT_EQ(r.relay.accepted(), 1U);
  EXPECT_EQ(r.relay.connect_failures(), 0U);
  EXPECT_EQ(r.relay.last_error(), "");
}

TEST(jitter_relay, a_reader_that_stops_holds_the_sender_back_and_the_relay_queues_a_bounded_amount) {
  constexpr std::size_t max_queued = 256 << 10;
  relayed r{0ms, 0ms, max_queued};
  ASSERT_GE(r.client.fd, 0);
  ASSERT_GE(r.server.fd, 0);
  const int client = r.client.fd, server = r.server.fd;
  // The target reads nothing: the client's writes must stall once the
  // kernel's buffers and the relay's queue are full (a second with no
  // room), long before 512 MiB.
  const std::vector<char> block(64 << 10, 'x');
  std::size_t sent = 0;
  bool stalled = false;
  while (!stalled && sent < (std::size_t{512} << 20)) {
    const ssize_t w = ::send(client, block.data(), block.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w > 0) {
      sent += static_cast<std::size_t>(w);
      continue;
    }
    ASSERT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK) << std::strerror(errno);
    pollfd p{client, POLLOUT, 0};
    stalled = ::poll(&p, 1, 1000) == 0;
  }
  EXPECT_TRUE(stalled) << "512 MiB went into a relay whose target reads nothing";
  EXPECT_LE(r.relay.peak_queued(), max_queued + jitter_relay::read_size);
  std::printf("the sender stalled after %zu KiB; the relay held at most %zu KiB\n", sent >> 10,
              r.relay.peak_queued() >> 10);
  // Once the target reads, everything arrives (nothing was dropped).
  ASSERT_EQ(::shutdown(client, SHUT_WR), 0);
  const auto got = read_to_end(server, sent + 1);
  EXPECT_EQ(got.size(), sent);
}

TEST(jitter_relay, every_chunk_is_held_at_least_its_delay) {
  // A lower bound only: a loaded machine makes a round trip slower, never
  // faster, so this cannot fail for want of CPU.
  relayed r{30ms, 0ms};
  ASSERT_GE(r.client.fd, 0);
  ASSERT_GE(r.server.fd, 0);
  const int client = r.client.fd, server = r.server.fd;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    char c = static_cast<char>('a' + i);
    ASSERT_EQ(::send(client, &c, 1, MSG_NOSIGNAL), 1);
    ASSERT_EQ(::recv(server, &c, 1, 0), 1);
    ASSERT_EQ(::send(server, &c, 1, MSG_NOSIGNAL), 1);
    ASSERT_EQ(::recv(client, &c, 1, 0), 1);
    EXPECT_EQ(c, 'a' + i);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 60ms) << "round trip " << i;
  }
}

TEST(jitter_relay, a_stopped_relay_closes_its_connections_and_its_port) {
  relayed r{1ms, 1ms};
  ASSERT_GE(r.client.fd, 0);
  ASSERT_GE(r.server.fd, 0);
  char c = 'x';
  ASSERT_EQ(::send(r.client.fd, &c, 1, MSG_NOSIGNAL), 1);
  ASSERT_EQ(::recv(r.server.fd, &c, 1, 0), 1);  // the connection is relayed
  r.relay.stop();
  EXPECT_EQ(r.relay.open(), 0U);
  EXPECT_TRUE(closed_by_peer(r.client.fd)) << "the client's connection stayed open";
  EXPECT_TRUE(closed_by_peer(r.server.fd)) << "the target's connection stayed open";
  EXPECT_LT(connect_to(r.relay.port()).fd, 0) << "the stopped relay still accepts connections";
  r.relay.stop();  // again: nothing happens
}

TEST(jitter_relay, errors_name_the_address_and_the_reason) {
  listener taken;
  auto s = to(taken.port, 0ms, 0ms);
  s.listen_port = taken.port;
  try {
    jitter_relay r{s};
    ADD_FAILURE() << "listened at a port already taken";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("127.0.0.1:" + std::to_string(taken.port)), std::string::npos) << what;
    EXPECT_NE(what.find(std::strerror(EADDRINUSE)), std::string::npos) << what;
  }
  s = to(1, 0ms, 0ms);
  s.target_host = "localhost";
  try {
    jitter_relay r{s};
    ADD_FAILURE() << "accepted a target that is not a numeric address";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string{e.what()}.find("'localhost'"), std::string::npos) << e.what();
  }
  s = to(70000, 0ms, 0ms);
  EXPECT_THROW(jitter_relay{s}, std::invalid_argument);
  s = to(1, 0ms, 0ms);
  s.max_queued = 0;
  EXPECT_THROW(jitter_relay{s}, std::invalid_argument);

  // A target where nothing listens: the client's connection is closed, and
  // the failure is counted and named.
  int closed_port = 0;
  {
    listener gone;  // a free port, closed again at once
    closed_port = gone.port;
  }
  jitter_relay relay{to(closed_port, 0ms, 0ms)};
  fd_guard client = connect_to(relay.port());
  ASSERT_GE(client.fd, 0);
  EXPECT_TRUE(closed_by_peer(client.fd));
  EXPECT_EQ(relay.connect_failures(), 1U);
  const std::string why = relay.last_error();
  EXPECT_NE(why.find("127.0.0.1:" + std::to_string(closed_port)), std::string::npos) << why;
  EXPECT_NE(why.find(std::strerror(ECONNREFUSED)), std::string::npos) << why;
}
