// Tests of troupe::metrics: the exporter scraped over HTTP while graphs run,
// its figures checked against the graph's and the system's own counters.
#include <httplib.h>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "local_peers.hpp"
#include "troupe/metrics.hpp"
#include "troupe/troupe.hpp"

#if defined(__SANITIZE_THREAD__)
// Debian's libcpp-httplib is not built with ThreadSanitizer: the function
// statics it fills on its first request (under a guard whose fast path TSan
// does not see) and that another connection's thread then reads look like
// a race. TSan ignores what the library itself copies and compares; races in
// troupe's code, handlers included, are still reported.
extern "C" const char* __tsan_default_suppressions() { return "called_from_lib:libcpp-httplib.so\n"; }
#endif

namespace st = troupe::stream;
namespace tmx = troupe::metrics;
using namespace std::chrono_literals;

namespace {

std::string get(const tmx::exporter& ex, const std::string& path, std::string* type = nullptr) {
  httplib::Client c{"127.0.0.1", ex.port()};
  c.set_read_timeout(10, 0);
  auto r = c.Get(path);
  if (!r) return "(no response: " + httplib::to_string(r.error()) + ")";
  EXPECT_EQ(r->status, 200) << path;
  if (type) *type = r->get_header_value("Content-Type");
  return r->body;
}

/// Samples of the Prometheus text: "name{labels}" -> value.
std::map<std::string, double> samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in{text};
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto sp = line.rfind(' ');
    out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
  }
  return out;
}

std::string node_key(const char* metric, const std::string& graph, const st::node_metrics& n) {
  return std::string{metric} + "{graph=\"" + graph + "\",stage=\"" + std::to_string(n.stage) + "\",node=\"" + n.name +
         "\",replica=\"" + std::to_string(n.replica) + "\",rank=\"" + std::to_string(n.rank) + "\"}";
}

template <class Pred>
bool eventually(Pred p) {
  for (int i = 0; i < 30'000; ++i) {
    if (p()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

/// Per stage, the items in and out of its replicas together.
struct stage_sums {
  std::uint64_t in = 0, out = 0;
};
std::map<std::size_t, stage_sums> by_stage(const st::graph_metrics& m) {
  std::map<std::size_t, stage_sums> out;
  for (auto& n : m.nodes) {
    out[n.stage].in += n.items_in;
    out[n.stage].out += n.items_out;
  }
  return out;
}
/// The same from the Prometheus text: label stage="k".
std::map<std::size_t, stage_sums> by_stage(const std::string& text) {
  std::map<std::size_t, stage_sums> out;
  for (auto& [key, value] : samples(text)) {
    const bool in = key.starts_with("troupe_stream_items_in_total{");
    if (!in && !key.starts_with("troupe_stream_items_out_total{")) continue;
    const auto at = key.find("stage=\"") + 7;
    const auto stage = static_cast<std::size_t>(std::stoul(key.substr(at, key.find('"', at) - at)));
    (in ? out[stage].in : out[stage].out) += static_cast<std::uint64_t>(value);
  }
  return out;
}
/// "" when every stage took at most what the stage before it emitted.
std::string cut_error(const std::map<std::size_t, stage_sums>& stages) {
  for (auto it = stages.begin(); it != stages.end(); ++it) {
    auto next = std::next(it);
    if (next == stages.end()) break;
    if (next->second.in > it->second.out)
      return "stage " + std::to_string(next->first) + " took " + std::to_string(next->second.in) + ", stage " +
             std::to_string(it->first) + " emitted " + std::to_string(it->second.out);
  }
  return {};
}

/// A little work per element (about a microsecond), so that a producer's
/// batch lasts while its consumer drains what it publishes.
void work() {
  const auto until = std::chrono::steady_clock::now() + 1us;
  while (std::chrono::steady_clock::now() < until) {
  }
}

/// A TCP connection to the exporter that sends `first` (maybe nothing, or
/// the start of a request) and then nothing more; -1 if it cannot connect.
int idle_connection(std::uint16_t port, const std::string& first = {}) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      (!first.empty() && ::send(fd, first.data(), first.size(), MSG_NOSIGNAL) < 0)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// GET path with a 10 s limit to connect and to read: the status, or -1
/// when no answer came.
int status_of_get(const tmx::exporter& ex, const std::string& path) {
  httplib::Client c{"127.0.0.1", ex.port()};
  c.set_connection_timeout(10, 0);
  c.set_read_timeout(10, 0);
  auto r = c.Get(path);
  return r ? r->status : -1;
}

}  // namespace

TEST(metrics, a_scrape_during_a_run_matches_the_graphs_own_counters) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  tmx::exporter ex{sys};
  std::atomic<int> seen{0};
  // A graph with an entry: it runs until closed, idle once what was sent is
  // through, so every counter has settled when the scrape comes.
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{troupe::farm{st::map([](int x) { return x + 1; }), 2}, st::sink([&](int) { seen++; })});
  ex.watch("gated", g);
  for (int i = 0; i < 5000; ++i) sys.send(g.entry(), i);
  ASSERT_TRUE(eventually([&] {
    auto m = g.metrics();
    return seen.load() == 5000 && m.nodes.back().items_in == 5000 &&
           m.nodes[0].items_out + m.nodes[1].items_out == 5000;
  }));
  std::string type;
  const auto text = get(ex, "/metrics", &type);
  EXPECT_NE(type.find("text/plain; version=0.0.4"), std::string::npos) << type;
  const auto s = samples(text);
  const auto m = g.metrics();
  ASSERT_EQ(m.nodes.size(), 3u);  // two map replicas, the sink
  EXPECT_EQ(m.nodes[0].stage, 0u);
  EXPECT_EQ(m.nodes[1].stage, 0u);
  EXPECT_EQ(m.nodes[1].replica, 1u);
  EXPECT_EQ(m.nodes[2].stage, 1u);
  for (auto& n : m.nodes) {
    ASSERT_TRUE(s.contains(node_key("troupe_stream_items_in_total", "gated", n))) << node_key("", "gated", n) << text;
    EXPECT_EQ(s.at(node_key("troupe_stream_items_in_total", "gated", n)), static_cast<double>(n.items_in));
    EXPECT_EQ(s.at(node_key("troupe_stream_items_out_total", "gated", n)), static_cast<double>(n.items_out));
    EXPECT_EQ(s.at(node_key("troupe_stream_capacity", "gated", n)), static_cast<double>(n.capacity));
    EXPECT_EQ(s.at(node_key("troupe_stream_failed_total", "gated", n)), 0.0);
  }
  EXPECT_GT(m.nodes[2].capacity, 0u);
  EXPECT_EQ(s.at("troupe_stream_graph_running{graph=\"gated\"}"), 1.0);
  EXPECT_EQ(s.at("troupe_workers"), 2.0);
  EXPECT_EQ(s.at("troupe_live_actors"), static_cast<double>(sys.live_actors()));

  const auto json = get(ex, "/api/graphs");
  EXPECT_NE(json.find("\"name\":\"gated\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"items_in\":5000"), std::string::npos) << json;

  for (int i = 0; i < 1000; ++i) sys.send(g.entry(), i);
  g.close();
  g.wait();
  EXPECT_EQ(seen.load(), 6000);
  const auto after = samples(get(ex, "/metrics"));
  EXPECT_EQ(after.at("troupe_stream_graph_running{graph=\"gated\"}"), 0.0);
  EXPECT_EQ(after.at(node_key("troupe_stream_items_in_total", "gated", g.metrics().nodes[2])), 6000.0);
  ex.unwatch("gated");
  EXPECT_EQ(get(ex, "/metrics").find("gated"), std::string::npos);
}

TEST(metrics, counters_move_while_the_graph_runs_and_no_rate_gauge_is_served) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  tmx::exporter ex{sys};
  std::atomic<bool> stop{false};
  auto g = troupe::spawn_pattern(sys, troupe::pipeline{st::source([&stop, i = 0]() mutable -> std::optional<int> {
                                                         if (stop.load(std::memory_order_relaxed)) return std::nullopt;
                                                         std::this_thread::sleep_for(20us);
                                                         return i++;
                                                       }),
                                                       st::sink([](int) {})});
  ex.watch("live", g);
  auto key = [&](const char* metric) { return node_key(metric, "live", g.metrics().nodes[1]); };
  const auto first = samples(get(ex, "/metrics"));
  std::this_thread::sleep_for(300ms);
  const auto text = get(ex, "/metrics");
  const auto second = samples(text);
  stop = true;
  g.wait();
  EXPECT_GT(second.at(key("troupe_stream_items_in_total")), first.at(key("troupe_stream_items_in_total")));
  // A rate depends on the window: Prometheus takes it from the counters.
  EXPECT_EQ(text.find("_rate"), std::string::npos) << text;
  EXPECT_GT(second.at("troupe_uptime_seconds"), first.at("troupe_uptime_seconds"));
}

TEST(metrics, a_slow_sink_shows_as_blocked_time_and_fill_upstream) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  tmx::exporter ex{sys};
  auto g = troupe::spawn_pattern(sys,
                                 troupe::pipeline{st::source([i = 0]() mutable -> std::optional<int> {
                                                    if (i == 20'000) return std::nullopt;
                                                    return i++;
                                                  }),
                                                  st::sink([](int) { std::this_thread::sleep_for(20us); })},
                                 st::options{.capacity = 64});
  ex.watch("slow", g);
  ASSERT_TRUE(eventually([&] { return g.metrics().nodes[0].blocked_ns > 20'000'000; }));  // 20 ms blocked
  const auto s = samples(get(ex, "/metrics"));
  auto m = g.metrics();
  EXPECT_GT(s.at(node_key("troupe_stream_blocked_seconds_total", "slow", m.nodes[0])), 0.02);
  EXPECT_EQ(s.at(node_key("troupe_stream_capacity", "slow", m.nodes[1])), 64.0);
  g.wait();
  m = g.metrics();
  EXPECT_GT(m.nodes[0].blocked_ns, 20'000'000u);
  EXPECT_LT(m.nodes[0].blocked_ns, static_cast<std::uint64_t>(m.elapsed_s * 1e9) + 1);
}

TEST(metrics, system_figures_follow_the_actor_system) {
  // Outlives the system: the busy actor below reads it until the system ends.
  std::atomic<bool> release{false};
  troupe::actor_system sys{troupe::config{.workers = 2}};
  tmx::exporter ex{sys};
  const auto before = samples(get(ex, "/metrics"));
  std::atomic<int> got{0};
  auto counter = sys.spawn([&got](troupe::event_actor&) { return troupe::behavior{[&got](int) { got++; }}; });
  for (int i = 0; i < 1000; ++i) sys.send(counter, i);
  ASSERT_TRUE(eventually([&] { return got.load() == 1000; }));
  // Counted when each activation ends (the handler may have run, the
  // activation not yet ended).
  ASSERT_TRUE(eventually([&] {
    return static_cast<double>(sys.messages_handled()) - before.at("troupe_messages_handled_total") >= 1000;
  }));
  // An actor busy with its first message: the other seven wait in its mailbox.
  auto busy = sys.spawn([&release](troupe::event_actor&) {
    return troupe::behavior{[&release](int) {
      while (!release.load()) std::this_thread::sleep_for(1ms);
    }};
  });
  for (int i = 0; i < 8; ++i) sys.send(busy, i);
  sys.send(troupe::actor{}, 1);  // a dead letter
  const auto after = samples(get(ex, "/metrics"));
  EXPECT_GE(after.at("troupe_messages_handled_total") - before.at("troupe_messages_handled_total"), 1000.0);
  EXPECT_LE(after.at("troupe_messages_handled_total"), static_cast<double>(sys.messages_handled()));
  EXPECT_EQ(after.at("troupe_dead_letters_total"), static_cast<double>(sys.dead_letters()));
  EXPECT_GE(after.at("troupe_mailbox_length{quantile=\"1\"}"), 7.0);
  EXPECT_GE(after.at("troupe_mailbox_messages"), 7.0);
  EXPECT_EQ(after.count("troupe_mailbox_length_count"), 0u);  // gauges: actors come and go
  EXPECT_GE(after.at("troupe_exporter_requests_total"), 1.0);
  release = true;
}

// The process_* families of Prometheus' client libraries, with sane values.
TEST(metrics, the_process_families_are_served) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  tmx::exporter ex{sys};
  std::string text = get(ex, "/metrics");
  for (const char* family : {"process_cpu_seconds_total counter", "process_resident_memory_bytes gauge",
                             "process_virtual_memory_bytes gauge", "process_open_fds gauge", "process_max_fds gauge",
                             "process_start_time_seconds gauge"})
    EXPECT_NE(text.find(std::string{"# TYPE "} + family + "\n"), std::string::npos) << family << "\n" << text;
  const auto s = samples(text);
  EXPECT_GT(s.at("process_cpu_seconds_total"), 0.0);
  EXPECT_GT(s.at("process_resident_memory_bytes"), 1e6);
  EXPECT_GE(s.at("process_virtual_memory_bytes"), s.at("process_resident_memory_bytes"));
  EXPECT_GE(s.at("process_open_fds"), 3.0);  // stdin, stdout, stderr and the listening socket at least
  EXPECT_LE(s.at("process_open_fds"), s.at("process_max_fds"));
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(s.at("process_start_time_seconds"), now + 1);
  EXPECT_GT(s.at("process_start_time_seconds"), now - 24 * 3600.0);  // this test started today
}

TEST(metrics, the_dashboard_and_its_json_are_served) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  tmx::exporter ex{sys};
  std::string type;
  const auto page = get(ex, "/", &type);
  EXPECT_NE(type.find("text/html"), std::string::npos);
  EXPECT_NE(page.find("api/graphs"), std::string::npos);
  EXPECT_EQ(page.find("http://"), std::string::npos) << "the page loads nothing from elsewhere";
  EXPECT_EQ(page.find("https://"), std::string::npos) << "the page loads nothing from elsewhere";
  const auto json = get(ex, "/api/graphs");
  EXPECT_EQ(json.rfind("{\"system\":{\"workers\":1,", 0), 0u) << json;
  EXPECT_NE(json.find("\"graphs\":[]"), std::string::npos) << json;
  httplib::Client c{"127.0.0.1", ex.port()};
  auto r = c.Get("/nothing-here");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

TEST(metrics, a_port_in_use_or_a_bad_port_is_named) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  tmx::exporter first{sys};
  try {
    tmx::exporter second{sys, {.address = "127.0.0.1", .port = first.port()}};
    FAIL() << "two exporters on one port";
  } catch (const tmx::metrics_error& e) {
    EXPECT_NE(std::string{e.what()}.find("127.0.0.1:" + std::to_string(first.port())), std::string::npos) << e.what();
  }
  for (const char* bad : {"", "http", "65536", "-1", "80x"}) {
    try {
      tmx::exporter::parse_port(bad, "--metrics-port");
      FAIL() << bad;
    } catch (const tmx::metrics_error& e) {
      EXPECT_NE(std::string{e.what()}.find("--metrics-port"), std::string::npos);
      EXPECT_NE(std::string{e.what()}.find(std::string{"'"} + bad + "'"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(tmx::exporter::parse_port("9464", "x"), 9464);
}

TEST(metrics, the_environment_turns_the_exporter_on) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  ::unsetenv("TROUPE_METRICS_PORT");
  EXPECT_EQ(tmx::exporter::from_env(sys), nullptr);
  ::setenv("TROUPE_METRICS_PORT", "0", 1);
  auto ex = tmx::exporter::from_env(sys);
  ASSERT_NE(ex, nullptr);
  EXPECT_NE(ex->port(), 0);
  EXPECT_NE(get(*ex, "/metrics").find("troupe_workers 1"), std::string::npos);
  ::setenv("TROUPE_METRICS_PORT", "nine", 1);
  try {
    (void)tmx::exporter::from_env(sys);
    FAIL() << "a malformed port";
  } catch (const tmx::metrics_error& e) {
    EXPECT_NE(std::string{e.what()}.find("TROUPE_METRICS_PORT"), std::string::npos);
    EXPECT_NE(std::string{e.what()}.find("'nine'"), std::string::npos);
  }
  ::unsetenv("TROUPE_METRICS_PORT");
}

TEST(metrics, label_values_are_escaped) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  tmx::exporter ex{sys};
  auto g = troupe::spawn_pattern(sys, troupe::pipeline{st::source([i = 0]() mutable -> std::optional<int> {
                                                         if (i == 10) return std::nullopt;
                                                         return i++;
                                                       }),
                                                       st::sink([](int) {})});
  g.wait();
  ex.watch("a \"quoted\"\\name\nwith a newline", g);
  const auto text = get(ex, "/metrics");
  EXPECT_NE(text.find("graph=\"a \\\"quoted\\\"\\\\name\\nwith a newline\""), std::string::npos) << text;
  const auto json = get(ex, "/api/graphs");
  EXPECT_NE(json.find("\"name\":\"a \\\"quoted\\\"\\\\name\\u000awith a newline\""), std::string::npos) << json;
}

TEST(metrics, a_split_graph_shows_the_part_of_its_rank) {
  troupe_test::ranks rs{2, 1};
  std::atomic<std::uint64_t> got{0};
  auto p = troupe::pipeline{
      st::source([i = 0]() mutable -> std::optional<int> {
        if (i == 1000) return std::nullopt;
        return i++;
      }),
      troupe::placed{troupe::farm{st::map([](int x) { return x + 1; }), 2}, troupe::placement::ranks("0,1")},
      st::sink([&got](int) { got.fetch_add(1); })};
  auto gs = rs.spawn(p);
  for (auto& g : gs) g.wait();
  EXPECT_EQ(got.load(), 1000u);
  tmx::exporter ex{*rs.systems[1]};
  ex.watch("split", gs[1]);
  const auto json = get(ex, "/api/graphs");
  EXPECT_NE(json.find("\"split\":true,\"rank\":1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\":\"from rank 0 (local)\""), std::string::npos) << json;  // its edges
  EXPECT_EQ(json.find("\"rank\":0,"), std::string::npos) << "only rank 1's part: " << json;
  const auto text = get(ex, "/metrics");
  EXPECT_NE(text.find("node=\"map\",replica=\"1\",rank=\"1\""), std::string::npos) << text;
  EXPECT_NE(get(ex, "/").find("s part"), std::string::npos);  // the dashboard's badge
}

// Within one scrape, no stage has taken more than the stage before it
// emitted (the sums over replicas): a scrape is a consistent cut, even
// though each replica publishes its counts once per batch. A slow source and
// fast stages after it: the consumers take the source's pushes in small
// groups while its batch goes on.
TEST(metrics, every_scrape_is_a_consistent_cut_of_items_in_and_out) {
  for (const auto& where : {troupe::placement::pool(), troupe::placement::own_thread()}) {
    troupe::actor_system sys{troupe::config{.workers = 3}};
    tmx::exporter ex{sys};
    std::atomic<bool> stop{false};
    auto g = troupe::spawn_pattern(
        sys,
        troupe::pipeline{st::source([&stop, i = std::int64_t{0}]() mutable -> std::optional<std::int64_t> {
                           if (stop.load(std::memory_order_relaxed)) return std::nullopt;
                           work();
                           return i++;
                         }),
                         st::map([](std::int64_t x) { return x + 1; }),
                         troupe::farm{st::map([](std::int64_t x) { return x * 2; }), 2},
                         st::filter([](const std::int64_t& x) { return x % 3 != 0; }), st::sink([](std::int64_t) {})},
        st::options{.placement = where});
    ex.watch("cut", g);
    int moving = 0;
    for (int i = 0; i < 200; ++i) {
      const bool text = i % 2 == 1;
      const auto stages = text ? by_stage(ex.prometheus_text()) : by_stage(g.metrics());
      ASSERT_EQ(stages.size(), 5u);
      const auto error = cut_error(stages);
      ASSERT_EQ(error, "") << (text ? "/metrics" : "graph.metrics()") << ", scrape " << i;
      if (stages.at(4).in != 0) ++moving;
      std::this_thread::sleep_for(1ms);
    }
    stop = true;
    g.wait();
    EXPECT_GT(moving, 0);
    const auto end = by_stage(g.metrics());
    EXPECT_EQ(end.at(1).in, end.at(0).out);
    EXPECT_EQ(end.at(4).in, end.at(3).out);
  }
}

// An ordered farm's replicas leave a placeholder for each input they drop
// (so that the reorder stage does not wait for it); no stage counts it.
TEST(metrics, an_ordered_farm_counts_no_placeholders) {
  troupe::actor_system sys{troupe::config{.workers = 3}};
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{st::source([i = std::int64_t{0}]() mutable -> std::optional<std::int64_t> {
                              if (i == 20'000) return std::nullopt;
                              return i++;
                            }),
                            troupe::farm{st::filter([](const std::int64_t& x) { return x % 4 != 3; }), 3,
                                         troupe::round_robin{}, troupe::ordered},
                            st::map([](std::int64_t x) { return x + 1; }), st::sink([](std::int64_t) {})});
  for (int i = 0; i < 50 && !g.done(); ++i) {
    ASSERT_EQ(cut_error(by_stage(g.metrics())), "") << "scrape " << i;
    std::this_thread::sleep_for(100us);
  }
  g.wait();
  const auto m = g.metrics();
  const auto stages = by_stage(m);
  ASSERT_EQ(stages.size(), 6u) << m.to_json();  // source, sequencer, replicas, reorder, map, sink
  EXPECT_EQ(stages.at(2).in, 20'000u);
  EXPECT_EQ(stages.at(2).out, 15'000u);
  EXPECT_EQ(stages.at(3).in, 15'000u) << m.to_json();
  EXPECT_EQ(stages.at(3).out, 15'000u);
  EXPECT_EQ(stages.at(5).in, 15'000u);
}

// Idle clients (connected, sending nothing) and slow ones (the start of a
// request, then nothing) must not hold the server: a scrape still answers.
// 10 s bounds what normally takes milliseconds.
TEST(metrics, idle_and_slow_connections_do_not_keep_scrapes_waiting) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  tmx::exporter ex{sys};
  std::vector<int> fds;
  fds.reserve(216);
  for (int i = 0; i < 8; ++i) fds.push_back(idle_connection(ex.port()));
  EXPECT_EQ(status_of_get(ex, "/metrics"), 200) << "8 idle connections";
  for (int i = 0; i < 200; ++i) fds.push_back(idle_connection(ex.port()));
  for (int i = 0; i < 8; ++i) fds.push_back(idle_connection(ex.port(), "GET /metr"));
  EXPECT_EQ(status_of_get(ex, "/metrics"), 200) << "216 idle or slow connections";
  EXPECT_EQ(status_of_get(ex, "/api/graphs"), 200);
  for (int fd : fds) {
    EXPECT_GE(fd, 0);
    if (fd >= 0) ::close(fd);
  }
  EXPECT_EQ(status_of_get(ex, "/metrics"), 200);
}

TEST(metrics, only_get_and_head_are_served) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  tmx::exporter ex{sys};
  httplib::Client c{"127.0.0.1", ex.port()};
  c.set_read_timeout(10, 0);
  const std::vector<std::pair<std::string, httplib::Result>> answers = [&] {
    std::vector<std::pair<std::string, httplib::Result>> v;
    v.emplace_back("POST", c.Post("/metrics", "x=1", "application/x-www-form-urlencoded"));
    v.emplace_back("PUT", c.Put("/metrics", "x", "text/plain"));
    v.emplace_back("PATCH", c.Patch("/api/graphs", "x", "text/plain"));
    v.emplace_back("DELETE", c.Delete("/"));
    v.emplace_back("OPTIONS", c.Options("/metrics"));
    return v;
  }();
  for (auto& [method, r] : answers) {
    ASSERT_TRUE(r) << method << ": " << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 405) << method;
    EXPECT_EQ(r->get_header_value("Allow"), "GET, HEAD") << method;
  }
  auto head = c.Head("/metrics");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_TRUE(head->body.empty());
  EXPECT_EQ(status_of_get(ex, "/metrics"), 200);
}

// A request with a large body is refused (413) or its connection closed:
// never read whole, never answered as if it were a scrape, never a hang.
TEST(metrics, a_large_request_body_is_refused) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  tmx::exporter ex{sys};
  const std::string big(1 << 20, 'x');
  {
    httplib::Client c{"127.0.0.1", ex.port()};
    c.set_read_timeout(10, 0);
    c.set_write_timeout(10, 0);
    auto r = c.Post("/metrics", big, "text/plain");
    if (r) {
      EXPECT_EQ(r->status, 413);
    }
  }
  // A GET with a body (as a raw request, which clients do not send).
  const int fd = idle_connection(
      ex.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(big.size()) + "\r\n\r\n");
  ASSERT_GE(fd, 0);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  (void)::send(fd, big.data(), big.size(), MSG_NOSIGNAL);  // may fail: the server may have closed
  char buf[256] = {};
  const auto n = ::recv(fd, buf, sizeof buf - 1, 0);
  ::close(fd);
  if (n > 0) {
    EXPECT_EQ(std::string(buf, 12), "HTTP/1.1 413") << buf;
  } else {
    EXPECT_TRUE(n == 0 || errno == ECONNRESET) << "no answer within 10 s: " << std::strerror(errno);
  }
  EXPECT_EQ(status_of_get(ex, "/metrics"), 200);
}

// Stopping does not wait for idle or slow clients to go.
TEST(metrics, the_exporter_stops_at_once_with_connections_open) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  auto ex = std::make_unique<tmx::exporter>(sys);
  std::vector<int> fds;
  fds.reserve(204);
  for (int i = 0; i < 200; ++i) fds.push_back(idle_connection(ex->port()));
  for (int i = 0; i < 4; ++i) fds.push_back(idle_connection(ex->port(), "GET / HTTP/1.1\r\nHost"));
  EXPECT_EQ(status_of_get(*ex, "/metrics"), 200);
  auto stopped = std::async(std::launch::async, [&ex] { ex.reset(); });
  EXPECT_EQ(stopped.wait_for(10s), std::future_status::ready);
  stopped.wait();
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
}

// A broadcast farm: each replica takes every element, so each replica's
// items in is at most what the stage before emitted; the stage after takes
// at most what the replicas emitted together.
TEST(metrics, a_broadcast_farm_is_a_consistent_cut_per_replica) {
  troupe::actor_system sys{troupe::config{.workers = 3}};
  std::atomic<bool> stop{false};
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{st::source([&stop, i = std::int64_t{0}]() mutable -> std::optional<std::int64_t> {
                              if (stop.load(std::memory_order_relaxed)) return std::nullopt;
                              work();
                              return i++;
                            }),
                            troupe::farm{st::map([](std::int64_t x) { return x; }), 2, troupe::broadcast{}},
                            st::sink([](std::int64_t) {})});
  for (int i = 0; i < 200; ++i) {
    const auto m = g.metrics();
    ASSERT_EQ(m.nodes.size(), 4u);
    for (std::size_t r : {1u, 2u})
      ASSERT_LE(m.nodes[r].items_in, m.nodes[0].items_out) << "replica " << r - 1 << ", scrape " << i;
    ASSERT_LE(m.nodes[3].items_in, m.nodes[1].items_out + m.nodes[2].items_out) << "scrape " << i;
    std::this_thread::sleep_for(1ms);
  }
  stop = true;
  g.wait();
  const auto m = g.metrics();
  EXPECT_EQ(m.nodes[1].items_in, m.nodes[0].items_out);
  EXPECT_EQ(m.nodes[2].items_in, m.nodes[0].items_out);
  EXPECT_EQ(m.nodes[3].items_in, 2 * m.nodes[0].items_out);
}
