// The run summary's JSON is written by hand (run_result::to_json) rather
// than with nlohmann-json: it is one flat object of numbers and a fixed name,
// written in a dozen lines, and the dependency would serve nothing else.
#include "app.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <thread>

#include <pthread.h>
#include <unistd.h>

namespace troupe_apps {

namespace {
std::string cannot_write(const char* what, const std::string& path) {
  return std::string{"cannot write the "} + what + " '" + path + "': " + std::strerror(errno);
}
}  // namespace

output_file::output_file(const std::string& path) {
  if (path.empty()) return;
  errno = 0;
  out_ = std::make_unique<std::ofstream>(path);
  if (!*out_) throw std::runtime_error(cannot_write("--output file", path));
}

void output_file::line(const std::string& s) {
  std::lock_guard<std::mutex> guard{mtx_};
  *out_ << s << '\n';
}

namespace {
/// Whether a node of this name is one of the application's sources: the
/// replay source, or a log's (--input nats:// or kafka://).
bool is_source(const std::string& name) { return name == "source" || name == "nats_source" || name == "kafka_source"; }

constexpr std::pair<const char*, double> quantiles[] = {{"min", 0},    {"p5", 0.05},  {"p25", 0.25}, {"p50", 0.5},
                                                        {"p75", 0.75}, {"p95", 0.95}, {"max", 1}};
}  // namespace

void run_result::print(std::ostream& out) const {
  out << app;
  if (!part.empty()) out << " (" << part << ")";
  out << ": " << elapsed_s << " s, source " << source_tuples << " tuples (" << source_rate() << " tuples/s), sink "
      << sink_tuples << " tuples (" << sink_rate() << " tuples/s)";
  if (malformed != 0) out << ", " << malformed << " malformed input lines skipped";
  if (interrupted) out << ", interrupted";
  if (checkpoints != 0) out << ", " << checkpoints << " checkpoint(s)";
  out << "\nlatency (us):";
  for (auto& [name, q] : quantiles) out << ' ' << name << ' ' << static_cast<double>(latency.percentile(q)) / 1000.0;
  out << " (" << latency.count() << " measured)\n";
}

std::string run_result::to_json() const {
  std::ostringstream o;
  o << "{\"app\":\"" << app << "\",\"elapsed_s\":" << elapsed_s << ",\"source_tuples\":" << source_tuples
    << ",\"sink_tuples\":" << sink_tuples << ",\"source_tuples_per_s\":" << source_rate()
    << ",\"sink_tuples_per_s\":" << sink_rate() << ",\"malformed_lines\":" << malformed
    << ",\"interrupted\":" << (interrupted ? "true" : "false") << ",\"checkpoints\":" << checkpoints;
  if (!part.empty()) o << ",\"part\":\"" << part << '"';
  o << ",\"parallelism\":[";
  for (std::size_t i = 0; i < parallelism.size(); ++i) o << (i ? "," : "") << parallelism[i];
  o << "],\"latency_us\":{\"count\":" << latency.count();
  for (auto& [name, q] : quantiles) o << ",\"" << name << "\":" << static_cast<double>(latency.percentile(q)) / 1000.0;
  o << "}}";
  return o.str();
}

run_result collect(const std::string& app, const troupe::stream::graph_metrics& m, std::uint64_t malformed,
                   std::vector<std::size_t> parallelism, double elapsed_s) {
  run_result r;
  r.app = app;
  r.elapsed_s = elapsed_s;
  r.malformed = malformed;
  r.parallelism = std::move(parallelism);
  for (auto& n : m.nodes) {
    if (is_source(n.name)) r.source_tuples += n.items_out;
    if (n.name == "sink") r.sink_tuples += n.items_in;
  }
  r.latency = m.latency;
  return r;
}

int fail(const std::string& program, const std::string& message, bool usage_hint) {
  std::fprintf(stderr, "%s: %s\n", program.c_str(), message.c_str());
  if (usage_hint) std::fprintf(stderr, "%s: '%s --help' lists every flag\n", program.c_str(), program.c_str());
  return 2;
}

// -- --generate -------------------------------------------------------------------

std::size_t lines_flag(const cli& c) {
  return static_cast<std::size_t>(parse_whole("--lines", c.extra.at("lines"), 1, max_generated_lines));
}

run_result write_generated(const std::string& program, const std::string& path, const std::vector<std::string>& lines,
                           const char* what) {
  errno = 0;
  std::ofstream f{path};
  if (!f) throw std::runtime_error(cannot_write("--generate file", path));
  for (auto& l : lines) f << l << '\n';
  f.close();
  if (!f) throw std::runtime_error(cannot_write("--generate file", path));
  std::printf("%s: wrote %zu %s to %s\n", program.c_str(), lines.size(), what, path.c_str());
  run_result r;
  r.report = false;
  return r;
}

std::unique_ptr<std::ofstream> open_json(const std::string& path) {
  if (path.empty()) return nullptr;
  errno = 0;
  auto f = std::make_unique<std::ofstream>(path);
  if (!*f) throw std::runtime_error(cannot_write("--json file", path));
  return f;
}

// -- signals ------------------------------------------------------------------------
//
// The handler only touches lock-free atomics and calls write(2) and _exit(2),
// which are async-signal-safe. The first signal sets the stop flag (the
// sources see it and end their streams); a second one, of either kind, ends
// the process at once. SIGINT and SIGTERM are blocked in every thread but one
// that only waits for them in pause(): the mask is set before the actor
// system starts its threads, which inherit it. So the handlers always run on
// that thread, and promptly under ThreadSanitizer too, which runs a handler
// only when its thread enters an intercepted call (a worker spinning, or the
// main thread waiting in a raw futex for the graph, never does).

namespace {

std::atomic<int> stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

// The messages, composed before any signal can arrive.
char first_message[512];
std::size_t first_length = 0;
char second_message[512];
std::size_t second_length = 0;

void say(const char* text, std::size_t n) noexcept {
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, text, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    text += w;
    n -= static_cast<std::size_t>(w);
  }
}

void on_signal(int sig) {
  const int saved = errno;
  if (detail::stop_flag.exchange(true)) {
    say(second_message, second_length);
    ::_exit(128 + sig);
  }
  stop_signal.store(sig);
  say(first_message, first_length);
  errno = saved;
}

std::size_t compose(char (&into)[512], const std::string& text) {
  const std::size_t n = std::min(text.size(), sizeof into);
  std::memcpy(into, text.data(), n);
  return n;
}

}  // namespace

void prepare_run(const std::string& program, cli& c) {
  c.progress = ::isatty(STDERR_FILENO) == 1;
  // On a terminal, the progress line is cleared first.
  const std::string clear = c.progress ? "\r\033[K" : "";
  first_length = compose(first_message, clear + program +
                                            ": interrupted: stopping the sources and draining the graph (a second "
                                            "signal exits at once)\n");
  second_length = compose(second_message, clear + program + ": interrupted again: exiting now, writing nothing\n");
  sigset_t set;  // the two signals: masked in the handler, blocked outside the waiting thread
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  struct sigaction sa{};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sa.sa_mask = set;
  for (int sig : {SIGINT, SIGTERM})
    if (::sigaction(sig, &sa, nullptr) != 0)
      throw std::runtime_error(std::string{"cannot install a signal handler: "} + std::strerror(errno));
  if (const int e = ::pthread_sigmask(SIG_BLOCK, &set, nullptr); e != 0)
    throw std::runtime_error(std::string{"cannot block SIGINT and SIGTERM: "} + std::strerror(e));
  std::thread{[set] {
    (void)::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    for (;;) ::pause();  // the handlers run here
  }}.detach();
}

int stop_status() noexcept {
  const int sig = stop_signal.load();
  return sig == 0 ? 0 : 128 + sig;
}

// -- progress -------------------------------------------------------------------------

metrics_server::metrics_server([[maybe_unused]] troupe::actor_system& sys, const std::string& app, const cli& c)
    : app_{app} {
  if (c.metrics_port < 0) return;
#if TROUPE_APPS_METRICS
  try {
    exporter_ = std::make_unique<troupe::metrics::exporter>(
        sys,
        troupe::metrics::exporter_config{.address = "127.0.0.1", .port = static_cast<std::uint16_t>(c.metrics_port)});
  } catch (const troupe::metrics::metrics_error& e) {
    throw usage_error(std::string{"--metrics-port: "} + e.what());
  }
  std::fprintf(stderr, "%s: metrics on %s (Prometheus text: %smetrics)\n", app.c_str(), exporter_->url().c_str(),
               exporter_->url().c_str());
#else
  throw usage_error("--metrics-port: this build has no troupe::metrics (cpp-httplib), so it cannot serve metrics");
#endif
}

metrics_server::~metrics_server() = default;

progress_line::progress_line(std::string app, const troupe::stream::graph& g) : app_{std::move(app)}, graph_{g} {
  thread_ = std::thread{[this] {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock{mtx_};
    for (auto next = start + std::chrono::seconds{1}; !cv_.wait_until(lock, next, [this] { return done_; });
         next += std::chrono::seconds{1}) {
      std::uint64_t in = 0, out = 0;
      for (auto& n : graph_.metrics().nodes) {
        if (is_source(n.name)) in += n.items_out;
        if (n.name == "sink") out += n.items_in;
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "\r%s: %.0f s, source %llu tuples, sink %llu tuples%s\033[K", app_.c_str(), s,
                   static_cast<unsigned long long>(in), static_cast<unsigned long long>(out),
                   stop_requested() ? ", draining" : "");
      std::fflush(stderr);
    }
  }};
}

progress_line::~progress_line() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    done_ = true;
  }
  cv_.notify_one();
  thread_.join();
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

}  // namespace troupe_apps
