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
//
// A graph split across processes: each rank's checkpointer writes its own
// part of a checkpoint (its runners' states; the edges keep none), and rank
// 0's coordinates (ext/edges.hpp has the messages). It starts checkpoint n
// on every rank, waits until every rank has its part on disk, writes its
// own file last (the one that makes n complete) and tells the others, whose
// listeners then commit. A barrier that reaches a rank before the trigger
// starts the checkpoint there as well. A restart picks, on every rank, the
// newest checkpoint whose files of all ranks are whole (the directory is
// one all ranks see: one machine, or a shared file system).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "troupe/actor/actor.hpp"
#include "troupe/stream/options.hpp"

namespace troupe::ext {
class peers;
class owned_cell;
}  // namespace troupe::ext

namespace troupe::detail {

class runner_base;
struct graph_state;

class checkpointer {
 public:
  /// `peers`: the graph is this rank's part of a split graph, `name` its name.
  checkpointer(graph_state& g, stream::checkpoint_options o, ext::peers* peers = nullptr, std::string name = {});
  ~checkpointer();
  checkpointer(const checkpointer&) = delete;
  checkpointer& operator=(const checkpointer&) = delete;

  /// Before the runners start: every runner's node takes its state from the
  /// last complete checkpoint in the directory, if there is one. Throws
  /// checkpoint_error for a directory it cannot use (another format version,
  /// another graph).
  void restore();
  /// Starts the thread that takes checkpoints (after the runners started;
  /// nothing if the graph has ended meanwhile and stop() has run).
  void start();
  /// The graph has finished (every runner has): the thread ends; `clean`
  /// (end of stream, no failure): the job is done: nodes that listen hear
  /// of a last checkpoint (commit_at_end), and the checkpoints go. Any
  /// thread, before or after start(); a second call does nothing.
  void stop(bool clean) noexcept;

  /// The id of the checkpoint the sources are asked to start (0: none yet).
  std::uint64_t requested() const noexcept { return requested_.load(std::memory_order_acquire); }
  /// The id of the last completed checkpoint (listeners commit up to it).
  std::uint64_t completed() const noexcept { return completed_.load(std::memory_order_acquire); }

  /// A runner has passed barrier `id` with its node's state (and, under
  /// unaligned barriers, the elements it took before the barriers after its
  /// snapshot, as it wrote them: replayed into it on recovery).
  void ack(std::uint64_t id, std::size_t slot, std::string state, std::string inflight = {});
  /// options.checkpoint.unaligned.
  bool unaligned() const noexcept { return opts_.unaligned; }
  /// A runner has ended: cleanly, its final state stands for every
  /// checkpoint from now on; else no checkpoint can complete any more.
  void finished(std::size_t slot, std::string state, bool clean);

  stream::recovery info() const;
  stream::checkpoint_stats stats() const;
  /// For errors: "; the last completed checkpoint is 7 ..." (or that none is).
  std::string last_completed() const;

  /// The checkpoint a graph of `rank` (of `ranks`) would resume from in
  /// `dir` (restored 0: none), and why newer ones are skipped. Throws
  /// checkpoint_error for a directory it could not use.
  static stream::recovery find(const std::string& dir, std::size_t rank, std::size_t ranks);

  struct mailbox;  // between the actor the ranks' checkpointers talk through and this one
  /// Mail came to this checkpointer's actor (any thread).
  void mail_arrived() noexcept;

 private:
  struct slot_state {
    runner_base* runner = nullptr;
    std::string state;        // at the last checkpoint it acknowledged
    std::string inflight;     // unaligned: elements taken before the barriers, after the snapshot
    std::uint64_t acked = 0;  // the last checkpoint acknowledged
    bool finished = false;    // it will not run again (wake it no more)
    bool ended = false;       // finished cleanly: `final_state` stands for the checkpoints after `acked`
    std::string final_state;
    /// In checkpoint `id`: it had ended (for `acked` itself the runner had
    /// passed the barrier before it ended, and what it sent after the
    /// barrier is not in the checkpoint: it resumes from `state`).
    bool ended_in(std::uint64_t id) const noexcept { return ended && acked != id; }
  };
  struct rank_state {
    actor handle;            // its checkpointer's actor (from its hello)
    std::uint64_t done = 0;  // the last checkpoint it has on disk
  };
  struct saved_runner;
  /// Binds the keyed states of the runner in `slot` (rescaled: see keyed_env).
  void bind_keyed(std::size_t slot, bool rescaled);
  /// The runner in `slot` resumes as a checkpoint had it.
  void restore_slot(std::size_t slot, std::string_view state, bool ended, std::string_view inflight);
  /// Restores checkpoint `id` (file `path`) into a graph whose stages have
  /// other replica counts; throws checkpoint_error where it cannot.
  void rescale(const std::string& path, const std::vector<saved_runner>& saved, std::uint64_t id);
  void connect();
  void run();
  void coordinate(std::unique_lock<std::mutex>& lock);
  void follow(std::unique_lock<std::mutex>& lock);
  /// Waits until pred() (re-checked at `until` too), handling mail
  /// meanwhile; false: stopping or broken.
  template <class Pred>
  bool await(std::unique_lock<std::mutex>& lock, Pred pred,
             std::chrono::steady_clock::time_point until = std::chrono::steady_clock::time_point::max());
  void handle_mail();
  /// After a clean end, in one process: a last checkpoint (every node
  /// ended) is stored and heard by the nodes that listen. false: it could
  /// not be written or a node threw (the graph fails; the files stay).
  bool commit_at_end() noexcept;
  /// Starts checkpoint `id` here (if newer): wakes the sources.
  void begin(std::uint64_t id);
  /// Checkpoint `id` is complete: listeners commit, old files go.
  void complete(std::uint64_t id);
  bool all_acked(std::uint64_t id) const;
  /// This rank's part of checkpoint `id`, as bytes.
  std::string serialize(std::uint64_t id) const;
  /// Writes this rank's file of checkpoint `id`; throws checkpoint_error.
  void write(std::uint64_t id, const std::string& bytes) const;
  /// Keeps this rank's files of the last `keep` checkpoints up to `upto`.
  void prune(std::uint64_t upto) const;
  /// The graph fails: checkpoint `id` could not be written.
  void write_failed(std::uint64_t id) noexcept;

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
  // A split graph (else peers_ is null and there is one rank).
  ext::peers* peers_ = nullptr;
  std::string name_;
  std::size_t rank_ = 0, ranks_ = 1;
  std::shared_ptr<mailbox> mailbox_;
  ext::owned_cell* cell_ = nullptr;
  actor self_;                                     // this checkpointer's actor (it keeps cell_)
  actor coordinator_;                              // rank 0's (on the other ranks)
  std::vector<rank_state> peer_;                   // rank 0: the other ranks
  bool mail_ = true;                               // mail may have come since the last drain
  std::uint64_t written_ = 0;                      // the last checkpoint whose part is on disk here
  std::chrono::steady_clock::time_point began_{};  // when the checkpoint in flight started here
  std::uint64_t bytes_ = 0;                        // this rank's file of the one in flight
  stream::checkpoint_stats stats_;
};

}  // namespace troupe::detail
