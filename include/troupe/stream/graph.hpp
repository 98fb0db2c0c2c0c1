// graph.hpp: a spawned stream graph and how to talk to it (spawn one with
// troupe::spawn_pattern, pattern/spawn_pattern.hpp).
//   namespace st = troupe::stream;
//   auto g = troupe::spawn_pattern(sys, troupe::pipeline{
//       st::source([i = 0]() mutable -> std::optional<int> { if (i == 100) return std::nullopt; return i++; }),
//       troupe::farm{st::map([](int x) { return x * x; }), 4},
//       st::sink([&](int x) { total += x; })});
//   g.wait();   // end of stream reached every node; rethrows a node's exception
//
// A graph whose first stage takes input (no source) has an entry actor:
// any actor sends it elements (`self.send(g, x)`, or `g.entry()`), and
// `stream::end_of_stream{}` (or g.close(), or dropping every handle to the
// entry) ends its input. When such a graph's last stage emits, the graph
// answers: a request gets the first result of its item as the response (or
// the item's error), and the results of a plain send go to its sender (or to
// options.results_to).
//
// End of stream: a source's produce() returning false (or the entry
// closing) drains every channel downstream; each node's on_stop runs after
// its last input and may still send; then its outputs close. Failures follow
// options.on_error (stream/options.hpp). cancel() stops every node now.
//
// Placement: nodes run on the actor system's workers by default (any number
// of nodes on any number of workers, one included); options.placement =
// placement::own_thread(cores), or wrapping part of a pattern in
// troupe::placed{p, placement::own_thread("<0> <1>")}, gives each node of it
// its own thread (pinned by the affinity string, if any). Idle nodes cost
// nothing on the pool; idle dedicated threads sleep on a futex after a short
// spin.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "troupe/actor/actor.hpp"
#include "troupe/actor/error.hpp"
#include "troupe/detail/graph_state.hpp"
#include "troupe/stream/metrics.hpp"
#include "troupe/stream/options.hpp"
#include "troupe/util/exception.hpp"

namespace troupe::stream {

/// A graph split across processes lost its edge to another process: a peer
/// was lost, or the part of the graph there failed. The message names the
/// peer (graph::wait() throws it; graph::error() is errc::edge_lost). A
/// troupe::exception with errc::edge_lost.
class edge_error : public std::runtime_error, public troupe::exception {
 public:
  explicit edge_error(const std::string& what) : std::runtime_error{what}, troupe::exception{errc::edge_lost} {}
  explicit edge_error(const char* what) : std::runtime_error{what}, troupe::exception{errc::edge_lost} {}
};

/// A spawned stream graph. Copies share the graph; the graph runs until its
/// end of stream (or cancel) whether or not a handle is left.
class graph {
 public:
  graph() = default;
  graph(std::shared_ptr<troupe::detail::graph_state> st, actor entry) : st_{std::move(st)}, entry_{std::move(entry)} {}

  /// The entry actor (invalid when the graph starts with a source).
  const actor& entry() const noexcept { return entry_; }
  operator const actor&() const noexcept { return entry_; }

  /// Blocks until every node has finished; rethrows the exception that
  /// stopped the graph, if any. On a worker thread it helps run other work.
  void wait() const {
    st_->wait_done();
    rethrow();
  }
  /// false if the graph is still running after `d`.
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> d) const {
    if (!st_->wait_done_for(std::chrono::duration_cast<std::chrono::nanoseconds>(d))) return false;
    rethrow();
    return true;
  }
  bool done() const noexcept { return st_->done.load(std::memory_order_acquire) != 0; }
  /// Ends the input of a graph with an entry (as end_of_stream does).
  void close() const;
  /// Stops every node now; queued elements are dropped.
  void cancel() const noexcept { st_->cancel(); }
  /// Whether the graph was stopped rather than drained: by cancel(), by a
  /// failure under failure::cancel, or by its actor system's shutdown (a graph
  /// still running tuning::shutdown_drain_ms after the actors have ended).
  bool cancelled() const noexcept { return st_->cancelled.load(std::memory_order_acquire); }
  /// The failure that stopped the graph (errc::none: none, so far).
  troupe::error error() const { return st_->error_value(); }
  /// Elements dropped under failure::skip so far.
  std::uint64_t failed() const noexcept { return st_->failed.load(std::memory_order_relaxed); }
  graph_metrics metrics() const { return st_->metrics(); }
  /// A graph with a checkpoint directory: the checkpoint it resumed from
  /// (0: none) and the newer ones it could not use.
  stream::recovery recovery() const { return st_->checkpoints ? st_->checkpoints->info() : stream::recovery{}; }
  /// A graph with a checkpoint directory: how many checkpoints completed,
  /// how long the last and the longest took, how large the last one is.
  stream::checkpoint_stats checkpoints() const {
    return st_->checkpoints ? st_->checkpoints->stats() : stream::checkpoint_stats{};
  }

 private:
  void rethrow() const {
    std::exception_ptr e;
    {
      std::lock_guard<std::mutex> guard{st_->mtx};
      e = st_->exception;
    }
    if (e) std::rethrow_exception(e);
  }

  std::shared_ptr<troupe::detail::graph_state> st_;
  actor entry_;
};

}  // namespace troupe::stream
