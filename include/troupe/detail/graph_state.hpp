// layer: stream
// graph_state.hpp: what a running graph shares between its runners, its
// entry actor and its handles.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "troupe/actor/error.hpp"
#include "troupe/detail/channel.hpp"
#include "troupe/detail/checkpointer.hpp"
#include "troupe/detail/system_access.hpp"
#include "troupe/stream/metrics.hpp"
#include "troupe/stream/options.hpp"

namespace troupe {
class actor_system;
}

namespace troupe::detail {

/// Counts a message nobody could take (the system's dead-letter counter).
void count_dead_letter(actor_system& sys) noexcept;

struct graph_state final : shutdown_client {
  explicit graph_state(actor_system& s, stream::options o) : sys{&s}, opts{std::move(o)} {}
  ~graph_state();

  actor_system* sys;
  stream::options opts;
  std::vector<std::unique_ptr<runner_base>> runners;
  std::atomic<std::size_t> remaining{0};
  std::atomic<bool> cancelled{false};
  std::atomic<std::uint32_t> done{0};
  std::atomic<std::uint32_t> releasing{0};  // runners between clearing `active` and their last look
  std::atomic<std::uint64_t> failed{0};     // elements dropped under failure::skip
  mutable std::mutex mtx;
  std::exception_ptr exception;       // the exception that stopped the graph
  troupe::error error;                // what it stands for
  std::shared_ptr<graph_state> self;  // keeps the graph alive while a runner runs
  std::vector<std::thread> threads;
  std::chrono::steady_clock::time_point started;
  bool registered = false;                    // with the actor system, while it runs
  bool staged = false;                        // the builder numbered the stages (a graph split across processes)
  std::size_t rank = 0;                       // split: this process's rank
  std::unique_ptr<checkpointer> checkpoints;  // options.checkpoint.dir set (else null)
  ext::peers* peers = nullptr;                // split: the ranks (their checkpointers coordinate)
  std::string name;                           // split: the graph's name among them

  /// Starts every runner (pool) or its thread (dedicated).
  void launch(std::shared_ptr<graph_state> me);
  /// Records the first failure and cancels.
  void fail(std::exception_ptr e, troupe::error err) noexcept;
  void cancel() noexcept;
  void cancel_for_shutdown() noexcept override { cancel(); }
  /// Called by each runner as its very last action.
  void runner_finished() noexcept;
  stream::graph_metrics metrics() const;
  troupe::error error_value() const;
  /// Blocks (helping, on a worker) until done.
  void wait_done() const;
  bool wait_done_for(std::chrono::nanoseconds d) const;
};

}  // namespace troupe::detail
