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
#include "troupe/metrics/exporter.hpp"

#include <httplib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

}  // namespace

struct exporter::impl {
  actor_system& sys;
  exporter_config cfg;
  clock::time_point started = clock::now();
  httplib::Server server;
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
  // A few threads are plenty: a scraper and a dashboard or two.
  s.new_task_queue = [] { return new httplib::ThreadPool(4); };
  s.set_keep_alive_timeout(2);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a
  // second program binds the same port and takes half of the scrapes.
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  s.set_pre_routing_handler([self](const httplib::Request&, httplib::Response&) {
    self->requests.fetch_add(1, std::memory_order_relaxed);
    return httplib::Server::HandlerResponse::Unhandled;
  });
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
