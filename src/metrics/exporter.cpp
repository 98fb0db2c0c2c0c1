// exporter.cpp: the metrics exporter: snapshots of the actor system and the
// watched graphs, written as Prometheus text and as the dashboard's JSON,
// served by cpp-httplib.
//
// Why cpp-httplib and our own text writer rather than prometheus-cpp: the
// exporter also serves the dashboard page and its JSON, which prometheus-cpp's
// exposer cannot; and the figures already live in troupe's own counters, so
// a registry of prometheus-cpp metric objects would only be copied into on
// every scrape. The text format is small (https://prometheus.io/docs/
// instrumenting/exposition_formats/) and tests/metrics_format_test.py checks
// ours with the reference parser (prometheus_client).
//
// Connections. cpp-httplib serves each connection on a thread of its task
// queue from accept to close, idle time included, and queues the rest
// without bound: a few idle clients held every thread and a scrape waited
// behind them. cpp-httplib has no connection limit, and its task queue only
// sees opaque jobs (a socket's job cannot be refused without leaking the
// socket). So the server here (http_server) keeps cpp-httplib's accept loop
// and request parser (Server::process_request) and replaces what serves a
// connection (the virtual Server::process_and_close_socket, as cpp-httplib's
// own SSLServer does): its own keep-alive loop, over a socket stream with a
// timeout per read or write and a deadline per request, registered in a
// table of the open connections. Its task queue (serving_pool) counts the
// connections accepted and not yet closed; at the limit, a new one displaces
// the connection that has waited longest without a whole request (idle
// between requests, or never finishing its first): that socket is shut
// down, its thread lets go at once. Only when every open connection is
// busy answering is the new one closed unanswered.
#include "troupe/metrics/exporter.hpp"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "troupe/util/json.hpp"

namespace troupe::metrics {

extern const char* const dashboard_html;  // dashboard.html, embedded at build time

namespace {

using clock = std::chrono::steady_clock;

std::string escape_label(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

/// A number as both formats want it (no exponent for integers, '.' decimal).
std::string num(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, end) : std::string{"0"};
}
std::string num(std::uint64_t v) { return std::to_string(v); }

struct graph_snapshot {
  std::string name;
  stream::graph_metrics m;
  bool done = false;
  bool cancelled = false;
  std::uint64_t failed = 0;
};

struct snapshot {
  std::size_t workers = 0;
  std::size_t live_actors = 0;
  std::uint64_t messages_handled = 0;
  std::uint64_t dead_letters = 0;
  std::uint64_t unexpected = 0;
  std::vector<std::size_t> mailboxes;  // sorted
  double uptime_s = 0;
  std::vector<graph_snapshot> graphs;
};

/// The q-quantile of sorted values (nearest rank); 0 when empty.
std::size_t quantile(const std::vector<std::size_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto i = static_cast<std::size_t>(std::llround(q * static_cast<double>(sorted.size() - 1)));
  return sorted[std::min(i, sorted.size() - 1)];
}

/// Writes one metric family: HELP, TYPE and its samples.
class family {
 public:
  family(std::ostringstream& o, const char* name, const char* type, const char* help) : o_{o}, name_{name} {
    o_ << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  }
  family& sample(const std::string& labels, const std::string& value, const char* suffix = "") {
    o_ << name_ << suffix;
    if (!labels.empty()) o_ << '{' << labels << '}';
    o_ << ' ' << value << '\n';
    return *this;
  }

 private:
  std::ostringstream& o_;
  const char* name_;
};

std::string node_labels(const graph_snapshot& g, const stream::node_metrics& n) {
  return "graph=\"" + escape_label(g.name) + "\",stage=\"" + std::to_string(n.stage) + "\",node=\"" +
         escape_label(n.name) + "\",replica=\"" + std::to_string(n.replica) + "\",rank=\"" + std::to_string(n.rank) +
         "\"";
}

/// The first line of a file under /proc ("" when it cannot be read).
std::string read_proc(const char* path) {
  std::ifstream in{path};
  std::string line;
  std::getline(in, line);
  return line;
}

/// The process's families, named and typed as Prometheus' client libraries
/// name them (process_cpu_seconds_total, ...), from /proc (Linux).
void process_families(std::ostringstream& o) {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  const double cpu = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                     static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
  family{o, "process_cpu_seconds_total", "counter", "User and system CPU time spent in seconds."}.sample("", num(cpu));
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  std::uint64_t pages = 0, resident = 0;
  std::istringstream{read_proc("/proc/self/statm")} >> pages >> resident;
  family{o, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes."}.sample("", num(pages * page));
  family{o, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes."}.sample("",
                                                                                               num(resident * page));
  // Field 22 of /proc/self/stat (after the command in parentheses, which may
  // hold spaces): the start in clock ticks after boot; /proc/stat's btime is
  // the boot in seconds since the epoch.
  const std::string stat = read_proc("/proc/self/stat");
  std::istringstream fields{stat.substr(std::min(stat.rfind(')') + 1, stat.size()))};
  std::string field;
  for (int i = 3; i <= 22; ++i) fields >> field;
  std::uint64_t boot = 0;
  {
    std::ifstream in{"/proc/stat"};
    for (std::string key; in >> key;) {
      if (key == "btime") {
        in >> boot;
        break;
      }
    }
  }
  const double start =
      static_cast<double>(boot) + std::strtod(field.c_str(), nullptr) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  family{o, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds."}.sample(
      "", num(start));
  std::uint64_t fds = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it{"/proc/self/fd", ec}, end; !ec && it != end; it.increment(ec)) ++fds;
  family{o, "process_open_fds", "gauge", "Number of open file descriptors."}.sample("", num(fds));
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  family{o, "process_max_fds", "gauge", "Maximum number of open file descriptors."}.sample(
      "", num(static_cast<std::uint64_t>(lim.rlim_cur)));
}

// ------------------------------------------------------------ HTTP limits

/// Connections open at once (accepted, not yet closed), and the most
/// threads that serve them: a Prometheus server and a few dashboards.
constexpr std::size_t max_connections = 16;
/// A connection waits this long for its next request, and is closed after
/// this many (the dashboard asks once a second).
constexpr auto keep_alive_timeout = std::chrono::seconds{5};
constexpr std::size_t keep_alive_requests = 100;
/// Each read or write waits at most this long; a request must be read and
/// answered within request_timeout.
constexpr auto io_timeout = std::chrono::seconds{5};
constexpr auto request_timeout = std::chrono::seconds{10};
/// Request bodies: every page is a GET, so a body is refused beyond this.
constexpr std::size_t max_payload = 4096;
/// Connections the kernel holds until they are accepted, as many as the
/// system allows: a burst of clients waits there instead of resending its
/// SYN a second later (cpp-httplib listens with 5).
constexpr int listen_backlog = SOMAXCONN;

/// One connection being served.
struct connection {
  int sock;
  bool waiting = true;                     // no whole request since it opened or was last answered
  bool displaced = false;                  // its socket was shut down to make room (or the server stops)
  bool last = false;                       // closed once answered (a request it could not read whole)
  clock::time_point since = clock::now();  // when it began waiting
};

/// The open connections; whoever waits longest without a whole request
/// gives way to a new one. The lock also orders a socket's shutdown here
/// before its close by its thread (a closed descriptor may be reused).
class connection_table {
 public:
  /// c starts being served; false: the server stops (close it at once).
  bool open(connection& c) {
    std::lock_guard<std::mutex> lock{mtx_};
    if (stopping_) return false;
    open_.push_back(&c);
    return true;
  }
  /// Before its socket closes.
  void close(connection& c) {
    std::lock_guard<std::mutex> lock{mtx_};
    open_.erase(std::find(open_.begin(), open_.end(), &c));
  }
  /// c has a whole request; false if it was displaced meanwhile.
  bool busy(connection& c) {
    std::lock_guard<std::mutex> lock{mtx_};
    c.waiting = false;
    return !c.displaced;
  }
  /// c was answered and waits for its next request; false if displaced.
  bool waiting(connection& c) {
    std::lock_guard<std::mutex> lock{mtx_};
    c.waiting = true;
    c.since = clock::now();
    return !c.displaced;
  }
  /// Shuts down the connection that has waited longest without a whole
  /// request; false if every one is busy.
  bool displace_one() {
    std::lock_guard<std::mutex> lock{mtx_};
    connection* oldest = nullptr;
    for (auto* c : open_)
      if (c->waiting && !c->displaced && (oldest == nullptr || c->since < oldest->since)) oldest = c;
    if (oldest == nullptr) return false;
    displace(*oldest);
    return true;
  }
  /// The server stops: every connection ends, and new ones are closed.
  void displace_all() {
    std::lock_guard<std::mutex> lock{mtx_};
    stopping_ = true;
    for (auto* c : open_)
      if (!c->displaced) displace(*c);
  }

 private:
  // Its reads and writes fail at once; its thread closes it.
  static void displace(connection& c) {
    c.displaced = true;
    ::shutdown(c.sock, SHUT_RDWR);
  }

  std::mutex mtx_;
  std::vector<connection*> open_;
  bool stopping_ = false;
};

/// Set while a job runs only to close its socket (the limit is reached).
thread_local bool refusing = false;
/// The connection this thread serves (for the routing handlers).
thread_local connection* serving = nullptr;

/// cpp-httplib's task queue: one job per accepted connection. Threads start
/// as connections come, up to max_connections, and then stay (asleep when
/// idle) until the server stops.
class serving_pool final : public httplib::TaskQueue {
 public:
  explicit serving_pool(connection_table& t) : table_{t} {}
  serving_pool(const serving_pool&) = delete;
  serving_pool& operator=(const serving_pool&) = delete;
  ~serving_pool() override { shutdown(); }

  /// A connection was accepted. At the limit, room is made: the connection
  /// waiting longest without a whole request is displaced; if none is (the
  /// others are busy answering or not started), the oldest one not started
  /// is closed instead; if none is queued either, this one.
  void enqueue(std::function<void()> job) override {
    std::unique_lock<std::mutex> lock{mtx_};
    if (stopping_) return refuse(lock, job);
    if (open_ >= max_connections && !table_.displace_one()) {
      if (jobs_.empty()) return refuse(lock, job);
      auto oldest = std::move(jobs_.front());
      jobs_.front() = std::move(job);  // keeps the order: the new one goes last
      std::rotate(jobs_.begin(), jobs_.begin() + 1, jobs_.end());
      return refuse(lock, oldest);
    }
    ++open_;
    jobs_.push_back(std::move(job));
    if (asleep_ == 0 && threads_.size() < max_connections) threads_.emplace_back([this] { work(); });
    else wake_.notify_one();
  }

  /// Ends every connection, then waits for the threads (jobs still queued
  /// close their sockets at once: the table refuses them).
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock{mtx_};
      if (stopping_) return;
      stopping_ = true;
    }
    table_.displace_all();
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  /// Runs `job` here, unlocked, only to close its socket (unanswered).
  static void refuse(std::unique_lock<std::mutex>& lock, std::function<void()>& job) {
    lock.unlock();
    refusing = true;
    job();
    refusing = false;
  }

  void work() {
    std::unique_lock<std::mutex> lock{mtx_};
    for (;;) {
      ++asleep_;
      wake_.wait(lock, [this] { return !jobs_.empty() || stopping_; });
      --asleep_;
      if (jobs_.empty()) return;
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
      --open_;
    }
  }

  connection_table& table_;
  std::mutex mtx_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  std::size_t open_ = 0;    // connections queued or being served
  std::size_t asleep_ = 0;  // threads waiting for a job
  bool stopping_ = false;
};

/// A connection's socket as cpp-httplib's request parser reads and writes
/// it: buffered reads (the parser reads a byte at a time), each read or
/// write bounded by io_timeout and by the request's deadline.
class socket_stream final : public httplib::Stream {
 public:
  explicit socket_stream(int sock) : sock_{sock} {}

  /// Waits up to keep_alive_timeout for a request to begin (or the peer to
  /// close, or the socket to be shut down: the read then fails).
  bool next_request() {
    if (pos_ < end_) return true;  // pipelined
    return poll_for(POLLIN, keep_alive_timeout);
  }
  /// The request that begins now must be read and answered by then.
  void set_deadline(clock::time_point d) noexcept { deadline_ = d; }

  bool is_readable() const override { return pos_ < end_ || wait(POLLIN); }
  bool is_writable() const override { return wait(POLLOUT); }
  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == end_) {
      if (!wait(POLLIN)) return -1;
      ssize_t n;
      do n = ::recv(sock_, buf_, sizeof buf_, 0);
      while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      pos_ = 0;
      end_ = static_cast<std::size_t>(n);
    }
    const std::size_t n = std::min(size, end_ - pos_);
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!wait(POLLOUT)) return -1;
    ssize_t n;
    do n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(::getsockname, ip, port); }
  socket_t socket() const override { return sock_; }

 private:
  bool wait(short events) const {
    const auto left = deadline_ - clock::now();
    if (left <= clock::duration::zero()) return false;
    return poll_for(events, std::min<clock::duration>(left, io_timeout));
  }
  bool poll_for(short events, clock::duration d) const {
    pollfd p{sock_, events, 0};
    const auto ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(d).count());
    int r;
    do r = ::poll(&p, 1, ms);
    while (r < 0 && errno == EINTR);
    return r > 0;
  }
  void address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ip.clear();
    port = 0;
    if (get(sock_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return;
    char text[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
      ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
      port = ntohs(v4->sin_port);
    } else if (a.ss_family == AF_INET6) {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
      ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
      port = ntohs(v6->sin6_port);
    }
    ip = text;
  }

  int sock_;
  clock::time_point deadline_ = clock::time_point::max();
  char buf_[4096];
  std::size_t pos_ = 0, end_ = 0;
};

/// The length of the body a request announces: 0 for none, the most there
/// is for a chunked one or a length that is not a number.
std::uint64_t announced_body(const httplib::Request& req) {
  if (req.has_header("Transfer-Encoding")) return UINT64_MAX;
  if (!req.has_header("Content-Length")) return 0;
  const auto text = req.get_header_value("Content-Length");
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  return ec == std::errc{} && end == text.data() + text.size() ? n : UINT64_MAX;
}

/// cpp-httplib's server with the connection handling above.
class http_server final : public httplib::Server {
 public:
  http_server() {
    new_task_queue = [this] { return new serving_pool{table_}; };
  }
  /// Before routing: the connection's request is whole, and it is busy
  /// until answered (not displaced); false if it was displaced meanwhile.
  bool request_read() { return serving == nullptr || table_.busy(*serving); }
  /// The connection closes once this answer is written.
  static void close_after_answer() noexcept {
    if (serving != nullptr) serving->last = true;
  }
  /// Once bound: the listen backlog (listen() again sets it).
  void set_backlog() { ::listen(svr_sock_.load(), listen_backlog); }

 private:
  bool process_and_close_socket(socket_t sock) override {
    bool ok = false;
    connection c{sock};
    if (!refusing && table_.open(c)) {
      socket_stream strm{sock};
      serving = &c;
      for (std::size_t left = keep_alive_requests; left != 0 && strm.next_request(); --left) {
        strm.set_deadline(clock::now() + request_timeout);
        bool closed = false;
        ok = process_request(strm, left == 1, closed, nullptr);
        if (!ok || closed || c.last || !table_.waiting(c)) break;
        strm.set_deadline(clock::time_point::max());
      }
      serving = nullptr;
      table_.close(c);
    } else {
      static constexpr char busy[] =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      [[maybe_unused]] const auto n = ::send(sock, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
  }

  connection_table table_;
};

}  // namespace

struct exporter::impl {
  actor_system& sys;
  exporter_config cfg;
  clock::time_point started = clock::now();
  http_server server;
  std::thread thread;
  int bound_port = 0;
  std::atomic<std::uint64_t> requests{0};

  std::mutex mtx;  // the watched graphs
  std::map<std::string, graph_view> graphs;

  impl(actor_system& s, exporter_config c) : sys{s}, cfg{std::move(c)} {}

  snapshot take() {
    snapshot s;
    s.workers = sys.worker_count();
    s.live_actors = sys.live_actors();
    s.messages_handled = sys.messages_handled();
    s.dead_letters = sys.dead_letters();
    s.unexpected = sys.unexpected_messages();
    s.mailboxes = sys.mailbox_lengths();
    std::sort(s.mailboxes.begin(), s.mailboxes.end());
    const auto now = clock::now();
    s.uptime_s = std::chrono::duration<double>(now - started).count();
    std::lock_guard<std::mutex> guard{mtx};
    for (auto& [name, v] : graphs) {
      graph_snapshot g;
      g.name = name;
      g.m = v.metrics();
      g.done = v.done && v.done();
      g.cancelled = v.cancelled && v.cancelled();
      if (v.failed) {
        g.failed = v.failed();
      } else {
        for (auto& n : g.m.nodes) g.failed += n.failed;
      }
      s.graphs.push_back(std::move(g));
    }
    return s;
  }

  std::string prometheus() {
    const snapshot s = take();
    std::ostringstream o;
    family{o, "troupe_workers", "gauge", "Worker threads of the actor system's pool."}.sample("", num(s.workers));
    family{o, "troupe_live_actors", "gauge", "Actors spawned and not ended yet."}.sample("", num(s.live_actors));
    family{o, "troupe_messages_handled_total", "counter", "Messages handled by event actors."}.sample(
        "", num(s.messages_handled));
    family{o, "troupe_dead_letters_total", "counter", "Messages that could not be delivered."}.sample(
        "", num(s.dead_letters));
    family{o, "troupe_unexpected_messages_total", "counter", "Messages no handler accepted."}.sample("",
                                                                                                     num(s.unexpected));
    {
      // Gauges: the live actors come and go, so a summary's _count would fall.
      family f{o, "troupe_mailbox_length", "gauge",
               "Mailbox lengths of the live actors now, by quantile over the actors (1: the longest)."};
      for (double q : {0.5, 0.9, 0.99, 1.0}) f.sample("quantile=\"" + num(q) + "\"", num(quantile(s.mailboxes, q)));
      std::uint64_t sum = 0;
      for (auto m : s.mailboxes) sum += m;
      family{o, "troupe_mailbox_messages", "gauge", "Messages waiting in the mailboxes of the live actors now."}.sample(
          "", num(sum));
    }
    family{o, "troupe_uptime_seconds", "gauge", "Seconds since the exporter started."}.sample("", num(s.uptime_s));
    stream_families(o, s);
    family{o, "troupe_exporter_requests_total", "counter", "HTTP requests the exporter answered."}.sample(
        "", num(requests.load(std::memory_order_relaxed)));
    process_families(o);
    return o.str();
  }

  static void stream_families(std::ostringstream& o, const snapshot& s) {
    struct per_node {
      const char* name;
      const char* type;
      const char* help;
      std::function<std::string(const graph_snapshot&, std::size_t)> value;
    };
    const per_node nodes[] = {
        {"troupe_stream_items_in_total", "counter", "Elements a node replica took from its inputs.",
         [](auto& g, auto i) { return num(g.m.nodes[i].items_in); }},
        {"troupe_stream_items_out_total", "counter", "Elements a node replica emitted.",
         [](auto& g, auto i) { return num(g.m.nodes[i].items_out); }},
        {"troupe_stream_failed_total", "counter", "Elements dropped after a failure (failure::skip).",
         [](auto& g, auto i) { return num(g.m.nodes[i].failed); }},
        {"troupe_stream_late_total", "counter", "Late elements dropped by time windows.",
         [](auto& g, auto i) { return num(g.m.nodes[i].late); }},
        {"troupe_stream_queued", "gauge", "Elements waiting in a replica's input channels.",
         [](auto& g, auto i) { return num(static_cast<std::uint64_t>(g.m.nodes[i].queued)); }},
        {"troupe_stream_capacity", "gauge", "Room of a replica's input channels (0: a source).",
         [](auto& g, auto i) { return num(static_cast<std::uint64_t>(g.m.nodes[i].capacity)); }},
        {"troupe_stream_channel_fill", "gauge", "Input channel fill, 0 to 1 (queued / capacity; 0 for sources).",
         [](auto& g, auto i) {
           auto& n = g.m.nodes[i];
           return num(n.capacity == 0 ? 0.0 : static_cast<double>(n.queued) / static_cast<double>(n.capacity));
         }},
        {"troupe_stream_blocked_seconds_total", "counter", "Time a replica waited for room in a full output.",
         [](auto& g, auto i) { return num(static_cast<double>(g.m.nodes[i].blocked_ns) * 1e-9); }},
    };
    for (auto& f : nodes) {
      family fam{o, f.name, f.type, f.help};
      for (auto& g : s.graphs)
        for (std::size_t i = 0; i < g.m.nodes.size(); ++i) fam.sample(node_labels(g, g.m.nodes[i]), f.value(g, i));
    }
    {
      family f{o, "troupe_stream_latency_seconds", "summary",
               "Source-to-sink latency of sampled elements (quantiles: bucket lower bounds, within 6.25%; _sum from "
               "the same buckets)."};
      for (auto& g : s.graphs) {
        const std::string gl = "graph=\"" + escape_label(g.name) + "\"";
        for (double q : {0.5, 0.9, 0.99, 1.0})
          f.sample(gl + ",quantile=\"" + num(q) + "\"", num(static_cast<double>(g.m.latency.percentile(q)) * 1e-9));
        f.sample(gl, num(g.m.latency.approximate_sum() * 1e-9), "_sum").sample(gl, num(g.m.latency.count()), "_count");
      }
    }
    family running{o, "troupe_stream_graph_running", "gauge", "1 while the graph runs, 0 once it has ended."};
    for (auto& g : s.graphs) running.sample("graph=\"" + escape_label(g.name) + "\"", g.done ? "0" : "1");
    family elapsed{o, "troupe_stream_graph_elapsed_seconds", "gauge", "Seconds since the graph started."};
    for (auto& g : s.graphs) elapsed.sample("graph=\"" + escape_label(g.name) + "\"", num(g.m.elapsed_s));
  }

  std::string json() {
    const snapshot s = take();
    json_writer w;
    w.object([&] {
      w.object("system", [&] {
        w.field("workers", s.workers).field("live_actors", s.live_actors).field("dead_letters", s.dead_letters);
        w.field("unexpected_messages", s.unexpected).field("messages_handled", s.messages_handled);
        w.field("mailbox_max", quantile(s.mailboxes, 1.0)).field("uptime_s", s.uptime_s);
      });
      w.array("graphs", [&] {
        for (auto& g : s.graphs) w.object([&] { graph_json(w, g); });
      });
    });
    return w.take();
  }

  /// One graph: its state, latency, and its stages (consecutive nodes of
  /// the same stage) with their replicas.
  static void graph_json(json_writer& w, const graph_snapshot& g) {
    w.field("name", g.name).field("elapsed_s", g.m.elapsed_s).field("done", g.done);
    w.field("cancelled", g.cancelled).field("failed", g.failed).field("split", g.m.split).field("rank", g.m.rank);
    w.object("latency_ns", [&] {
      w.field("count", g.m.latency.count());
      for (auto [label, q] : {std::pair{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"max", 1.0}})
        w.field(label, g.m.latency.percentile(q));
    });
    const auto& nodes = g.m.nodes;
    w.array("stages", [&] {
      for (std::size_t i = 0; i < nodes.size();) {
        std::size_t end = i + 1;
        while (end < nodes.size() && nodes[end].stage == nodes[i].stage) ++end;
        w.object([&] {
          w.field("index", nodes[i].stage).field("name", nodes[i].name);
          w.array("replicas", [&] {
            for (std::size_t k = i; k < end; ++k) {
              auto& n = nodes[k];
              w.object([&] {
                w.field("replica", n.replica).field("name", n.name).field("rank", n.rank);
                w.field("dedicated", n.dedicated).field("items_in", n.items_in).field("items_out", n.items_out);
                w.field("failed", n.failed).field("late", n.late).field("queued", n.queued);
                w.field("capacity", n.capacity).field("blocked_s", static_cast<double>(n.blocked_ns) * 1e-9);
              });
            }
          });
        });
        i = end;
      }
    });
  }
};

exporter::exporter(actor_system& sys, exporter_config cfg) : impl_{std::make_unique<impl>(sys, std::move(cfg))} {
  auto& s = impl_->server;
  auto* self = impl_.get();
  // The limits (top of this file). Connections, keep-alive and timeouts are
  // http_server's; cpp-httplib's own timeouts also bound a blocking read or
  // write (SO_RCVTIMEO, SO_SNDTIMEO on each accepted socket).
  const auto io_s = static_cast<time_t>(io_timeout.count());
  s.set_read_timeout(io_s).set_write_timeout(io_s);
  s.set_keep_alive_timeout(static_cast<time_t>(keep_alive_timeout.count()));
  s.set_keep_alive_max_count(keep_alive_requests);
  s.set_payload_max_length(max_payload);  // a longer body: 413, then the connection closes
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a
  // second program binds the same port and takes half of the scrapes.
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  // GET and HEAD only; anything else is 405. The methods that carry a body
  // are answered by the handlers below once cpp-httplib has read it (up to
  // max_payload), so that the connection can go on; the others here.
  const auto not_allowed = [](httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content("Only GET and HEAD are served here.\n", "text/plain; charset=utf-8");
  };
  s.set_pre_routing_handler([self, not_allowed](const httplib::Request& req, httplib::Response& res) {
    self->requests.fetch_add(1, std::memory_order_relaxed);
    if (!self->server.request_read()) {  // displaced meanwhile: it cannot be answered
      res.status = 503;
      return httplib::Server::HandlerResponse::Handled;
    }
    const auto& m = req.method;
    // cpp-httplib reads the body of these (up to max_payload; longer: 413),
    // and of no other method.
    const bool read = m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE";
    if (!read) {
      const auto body = announced_body(req);
      if (body != 0) http_server::close_after_answer();  // the body is not read: no request follows it
      if (body > max_payload) {
        res.status = 413;
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (m == "GET" || m == "HEAD" || read) return httplib::Server::HandlerResponse::Unhandled;
    not_allowed(res);
    return httplib::Server::HandlerResponse::Handled;
  });
  const auto refuse = [not_allowed](const httplib::Request&, httplib::Response& res) { not_allowed(res); };
  s.Post(".*", refuse).Put(".*", refuse).Patch(".*", refuse).Delete(".*", refuse);
  // A request it could not read whole (too long a body: 413; malformed:
  // 400): what follows on the connection is not a request.
  s.set_error_handler(httplib::Server::HandlerWithResponse{[](const httplib::Request&, httplib::Response& res) {
    if (res.status == 400 || res.status == 413 || res.status == 414 || res.status == 431)
      http_server::close_after_answer();
    return httplib::Server::HandlerResponse::Unhandled;
  }});
  s.Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    res.set_content(self->prometheus(), "text/plain; version=0.0.4; charset=utf-8");
  });
  s.Get("/api/graphs", [self](const httplib::Request&, httplib::Response& res) {
    res.set_header("Cache-Control", "no-store");
    res.set_content(self->json(), "application/json");
  });
  s.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(dashboard_html, "text/html; charset=utf-8");
  });
  const auto& c = impl_->cfg;
  const std::string where = c.address + ":" + std::to_string(c.port);
  if (c.port == 0) impl_->bound_port = s.bind_to_any_port(c.address);
  else impl_->bound_port = s.bind_to_port(c.address, c.port) ? c.port : -1;
  if (impl_->bound_port <= 0)
    throw metrics_error{"troupe metrics: cannot listen on " + where +
                        " (address in use, or not an address of this machine)"};
  s.set_backlog();
  // Bound already: connections queue in the listen backlog until the loop runs.
  impl_->thread = std::thread{[self] { self->server.listen_after_bind(); }};
  // stop() does nothing to a server whose loop has not started yet (it
  // would then run forever): wait for the loop.
  for (int i = 0; i < 50'000 && !s.is_running(); ++i) std::this_thread::sleep_for(std::chrono::microseconds{100});
}

exporter::~exporter() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::uint16_t exporter::parse_port(const std::string& text, const std::string& what) {
  unsigned v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc{} || p != end || v > 65535)
    throw metrics_error{what + ": expected a port number from 0 to 65535, got '" + text + "'"};
  return static_cast<std::uint16_t>(v);
}

std::unique_ptr<exporter> exporter::from_env(actor_system& sys) {
  const char* port = std::getenv("TROUPE_METRICS_PORT");
  if (port == nullptr) return nullptr;
  exporter_config c;
  c.port = parse_port(port, "TROUPE_METRICS_PORT");
  if (const char* a = std::getenv("TROUPE_METRICS_ADDRESS"); a != nullptr && *a != '\0') c.address = a;
  return std::make_unique<exporter>(sys, std::move(c));
}

void exporter::watch(const std::string& name, const stream::graph& g) {
  graph_view v;
  v.metrics = [g] { return g.metrics(); };
  v.done = [g] { return g.done(); };
  v.cancelled = [g] { return g.cancelled(); };
  v.failed = [g] { return g.failed(); };
  watch_view(name, std::move(v));
}

void exporter::watch_view(const std::string& name, graph_view v) {
  if (!v.metrics) throw std::invalid_argument{"troupe metrics: watch '" + name + "': a view without metrics"};
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->graphs[name] = std::move(v);
}

void exporter::unwatch(const std::string& name) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  impl_->graphs.erase(name);
}

std::uint16_t exporter::port() const noexcept { return static_cast<std::uint16_t>(impl_->bound_port); }
std::string exporter::url() const { return "http://" + impl_->cfg.address + ":" + std::to_string(port()) + "/"; }
std::string exporter::prometheus_text() { return impl_->prometheus(); }
std::string exporter::graphs_json() { return impl_->json(); }
std::uint64_t exporter::requests() const noexcept { return impl_->requests.load(std::memory_order_relaxed); }

}  // namespace troupe::metrics
