// layer: stream
// checkpointer.hpp: what coordinates a graph's checkpoints (the protocol is
// at the top of channel.hpp; the user's side in stream/checkpoint.hpp).
//
// One per graph that has a checkpoint directory. Before the runners start it
// finds the last complete checkpoint in the directory and hands each runner
// its node's state. While the graph runs, its thread starts a checkpoint
// every interval: it raises `requested` and wakes the sources, which
// snapshot their position and send the barrier on; every runner acknowledges
// with its node's state once all its inputs are aligned. When every runner
// has (a finished runner counts with its final state), the thread writes the
// checkpoint file (the runners do not wait for it: snapshots are
// asynchronous), raises `completed` and wakes the runners whose node listens
// (two-phase sinks commit then). Files: src/stream/checkpoint.cpp.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "troupe/stream/options.hpp"

namespace troupe::detail {

class runner_base;
struct graph_state;

class checkpointer {
 public:
  checkpointer(graph_state& g, stream::checkpoint_options o);
  ~checkpointer();
  checkpointer(const checkpointer&) = delete;
  checkpointer& operator=(const checkpointer&) = delete;

  /// Before the runners start: every runner's node takes its state from the
  /// last complete checkpoint in the directory, if there is one. Throws
  /// checkpoint_error for a directory it cannot use (another format version,
  /// another graph).
  void restore();
  /// Starts the thread that takes checkpoints (after the runners started).
  void start();
  /// The graph has finished (every runner has): the thread ends; `clean`
  /// (end of stream, no failure): the job is done and its checkpoints go.
  void stop(bool clean) noexcept;

  /// The id of the checkpoint the sources are asked to start (0: none yet).
  std::uint64_t requested() const noexcept { return requested_.load(std::memory_order_acquire); }
  /// The id of the last completed checkpoint (listeners commit up to it).
  std::uint64_t completed() const noexcept { return completed_.load(std::memory_order_acquire); }

  /// A runner has passed barrier `id` with its node's state.
  void ack(std::uint64_t id, std::size_t slot, std::string state);
  /// A runner has ended: cleanly, its final state stands for every
  /// checkpoint from now on; else no checkpoint can complete any more.
  void finished(std::size_t slot, std::string state, bool clean);

  stream::recovery info() const;

 private:
  struct slot_state {
    runner_base* runner = nullptr;
    std::string state;
    std::uint64_t acked = 0;  // the last checkpoint acknowledged
    bool finished = false;    // it will not run again (wake it no more)
    bool ended = false;       // finished cleanly: `state` is final
  };
  void run();
  bool all_acked(std::uint64_t id) const;
  /// Writes checkpoint `id` (its file, then the rename); throws checkpoint_error.
  void write(std::uint64_t id, const std::string& bytes) const;
  void prune() const;

  graph_state* graph_;
  stream::checkpoint_options opts_;
  alignas(64) std::atomic<std::uint64_t> requested_{0};
  std::atomic<std::uint64_t> completed_{0};
  mutable std::mutex mtx_;
  std::condition_variable cv_;
  std::vector<slot_state> slots_;  // by runner slot
  bool stopping_ = false;
  bool broken_ = false;  // a runner failed: no checkpoint can complete
  std::uint64_t next_id_ = 1;
  stream::recovery info_;
  std::thread thread_;
};

}  // namespace troupe::detail
