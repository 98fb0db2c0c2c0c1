// exporter.hpp: live metrics of a running program over HTTP (optional module
// troupe::metrics, built when cpp-httplib is found).
//   troupe::metrics::exporter ex{sys, {.port = 9464}};   // serves until destroyed
//   auto g = troupe::spawn_pattern(sys, pipeline{...});
//   ex.watch("wc", g);
//   // GET http://127.0.0.1:9464/metrics     Prometheus text format (0.0.4)
//   // GET http://127.0.0.1:9464/            a live dashboard of the graphs
//   // GET http://127.0.0.1:9464/api/graphs  the dashboard's JSON
//   auto ex2 = troupe::metrics::exporter::from_env(sys);  // TROUPE_METRICS_PORT, or nullptr
//
// What it serves: the actor system (workers, live actors, messages handled,
// dead letters, unexpected messages, mailbox length quantiles, uptime), the
// process (process_* as Prometheus' client libraries name them) and every
// watched graph (per node replica: items in/out, failed and late elements, input channel fill
// and capacity, time blocked on a full output; per graph: sink latency
// quantiles, elapsed time, running/done/cancelled).
//
// Cost: nothing on the hot paths. A scrape reads the counters the graph
// keeps anyway (published once per batch; one scrape is a consistent cut:
// no stage shows more items in than the stages feeding it show out) and
// visits the live actors for their mailbox lengths (each shard's lock,
// briefly); the graph runs on. The server runs on threads of its own, one
// per open connection (at most 16).
//
// Off by default: nothing listens unless an exporter is made. It binds to
// 127.0.0.1 unless told otherwise; it has no authentication (put it behind
// a proxy to expose it further). GET and HEAD only (else 405); 16
// connections at most, a new one displacing the one idle longest; 5 s per
// read or write, 10 s per request, 5 s idle between requests; bodies up to
// 4 KiB (docs/observability.md, "Limits").
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "troupe/actor/actor_system.hpp"
#include "troupe/stream/graph.hpp"
#include "troupe/stream/metrics.hpp"
#include "troupe/util/exception.hpp"

namespace troupe::metrics {

/// The exporter could not start (address in use, bad address, bad port);
/// also a troupe::exception with errc::runtime_error.
class metrics_error : public std::runtime_error, public troupe::exception {
 public:
  explicit metrics_error(const std::string& what) : std::runtime_error{what}, troupe::exception{errc::runtime_error} {}
  explicit metrics_error(const char* what) : std::runtime_error{what}, troupe::exception{errc::runtime_error} {}
};

struct exporter_config {
  std::string address = "127.0.0.1";  ///< where to listen ("0.0.0.0": every interface)
  std::uint16_t port = 0;             ///< 0: any free port (port() tells which)
};

/// A watched graph as the exporter reads it: any graph kind with metrics().
struct graph_view {
  std::function<stream::graph_metrics()> metrics;
  std::function<bool()> done;       ///< may be empty: never done
  std::function<bool()> cancelled;  ///< may be empty
  std::function<std::uint64_t()> failed;
};

class exporter {
 public:
  /// Starts serving; throws metrics_error naming the address and the reason
  /// when it cannot listen.
  explicit exporter(actor_system& sys, exporter_config cfg = {});
  /// Stops serving: closes every open connection at once (an answer being
  /// written is cut off) and returns once no request is being handled; it
  /// does not wait for idle clients.
  ~exporter();
  exporter(const exporter&) = delete;
  exporter& operator=(const exporter&) = delete;

  /// An exporter when TROUPE_METRICS_PORT is set (a port number, 0 for any;
  /// TROUPE_METRICS_ADDRESS for the address), else nullptr. A malformed
  /// value throws metrics_error naming the variable and the value.
  static std::unique_ptr<exporter> from_env(actor_system& sys);
  /// A port number from text (0-65535); `what` names it in the error.
  static std::uint16_t parse_port(const std::string& text, const std::string& what);

  /// Serves `g` as `name` (a name already watched is replaced). The graph
  /// stays listed after its end, as done, until unwatch().
  void watch(const std::string& name, const stream::graph& g);
  template <class G>
    requires requires(const G& g) {
      { g.metrics() } -> std::convertible_to<stream::graph_metrics>;
    }
  void watch(const std::string& name, const G& g) {
    graph_view v;
    v.metrics = [g] { return g.metrics(); };
    if constexpr (requires { g.done(); }) v.done = [g] { return g.done(); };
    watch_view(name, std::move(v));
  }
  void watch_view(const std::string& name, graph_view v);
  void unwatch(const std::string& name);

  std::uint16_t port() const noexcept;
  /// http://address:port/
  std::string url() const;
  /// What GET /metrics serves.
  std::string prometheus_text();
  /// What GET /api/graphs serves.
  std::string graphs_json();
  /// Requests answered so far (any path).
  std::uint64_t requests() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace troupe::metrics
