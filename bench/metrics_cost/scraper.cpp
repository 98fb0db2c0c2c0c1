// metrics_cost: the scraper (an httplib::Client, as a Prometheus server or the
// dashboard would fetch the exporter) and the dispatch to the workloads.
#include <httplib.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "impls.hpp"

namespace bench::metrics_cost {

sample run(const params& p, mode m) { return p.has("app") ? run_wc(p, m) : run_pipeline3(p, m); }

std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  check(fd >= 0, "free_port: socket() failed");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(fd);
  check(ok, "free_port: cannot bind 127.0.0.1:0");
  return ntohs(a.sin_port);
}

struct scraper::state {
  httplib::Client client;
  std::string graph_label;  // what a /metrics body holds once the graph is watched
  std::chrono::milliseconds period;
  std::mutex mtx;
  std::condition_variable cv;
  bool stopping = false;
  std::thread thread;
  // Written by the scraping thread only (read after it is joined).
  std::uint64_t scrapes = 0;
  bool graph_seen = false;
  std::size_t metrics_bytes = 0;
  std::vector<double> metrics_ms, graphs_ms;
  std::string first_failure;

  state(std::uint16_t port, std::string graph, std::chrono::milliseconds p)
      : client{"127.0.0.1", port}, graph_label{"graph=\"" + graph + "\""}, period{p} {
    client.set_connection_timeout(5);
    client.set_read_timeout(10);
  }

  /// One GET; false (and the first failure kept) unless 200 with a body.
  bool get(const char* path, std::vector<double>& ms, std::string* body) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = client.Get(path);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    std::string what;
    if (!r) what = "no answer (" + httplib::to_string(r.error()) + ")";
    else if (r->status != 200) what = "status " + std::to_string(r->status);
    else if (r->body.empty()) what = "an empty body";
    if (!what.empty()) {
      if (first_failure.empty())
        first_failure = std::string{"scrape "} + std::to_string(scrapes + 1) + ": GET " + path + ": " + what;
      return false;
    }
    if (body != nullptr) *body = std::move(r->body);
    return true;
  }

  void scrape() {
    std::string text;
    if (get("/metrics", metrics_ms, &text)) {
      metrics_bytes = text.size();
      graph_seen = graph_seen || text.find(graph_label) != std::string::npos;
    }
    get("/api/graphs", graphs_ms, nullptr);
    ++scrapes;
  }

  void loop() {
    auto next = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock{mtx};
    while (!stopping) {
      lock.unlock();
      scrape();
      lock.lock();
      next += period;
      cv.wait_until(lock, next, [this] { return stopping; });
    }
  }
};

scraper::scraper(std::uint16_t port, std::string graph, std::chrono::milliseconds period)
    : st_{std::make_unique<state>(port, std::move(graph), period)} {
  if (period.count() > 0) st_->thread = std::thread{[s = st_.get()] { s->loop(); }};
}

scraper::~scraper() { stop(); }

void scraper::stop() {
  {
    std::lock_guard<std::mutex> lock{st_->mtx};
    st_->stopping = true;
  }
  st_->cv.notify_all();
  if (st_->thread.joinable()) st_->thread.join();
}

void scraper::scrape_once() { st_->scrape(); }

namespace {
double median_of(std::vector<double> xs) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  const auto n = xs.size();
  return n % 2 == 1 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}
double max_of(const std::vector<double>& xs) { return xs.empty() ? 0 : *std::max_element(xs.begin(), xs.end()); }
}  // namespace

void scraper::finish(sample& s) {
  stop();
  auto& st = *st_;
  // One line per run on stderr: under --instructions the extras stay out of
  // the JSON, and the scrape count is what turns instructions into a cost
  // per scrape.
  std::fprintf(stderr,
               "    scrapes %llu: GET /metrics median %.2f ms, max %.2f ms, %zu bytes; "
               "GET /api/graphs median %.2f ms, max %.2f ms\n",
               static_cast<unsigned long long>(st.scrapes), median_of(st.metrics_ms), max_of(st.metrics_ms),
               st.metrics_bytes, median_of(st.graphs_ms), max_of(st.graphs_ms));
  check(st.first_failure.empty(), st.first_failure);
  check(st.scrapes > 0, "the scraper never scraped");
  check(st.graph_seen, "no /metrics answer named the watched graph (" + st.graph_label + ")");
  s.add("scrapes", static_cast<double>(st.scrapes), "scrapes", true);
  s.add("scrape_metrics_ms", median_of(st.metrics_ms), "ms");
  s.add("scrape_metrics_max_ms", max_of(st.metrics_ms), "ms");
  s.add("scrape_graphs_ms", median_of(st.graphs_ms), "ms");
  s.add("scrape_graphs_max_ms", max_of(st.graphs_ms), "ms");
  s.add("metrics_bytes", static_cast<double>(st.metrics_bytes), "B");
}

}  // namespace bench::metrics_cost
