// options.hpp: how a stream graph is spawned, how it ends and how it reports.
//   troupe::spawn_pattern(sys, pattern, {.capacity = 256, .on_error = troupe::stream::failure::skip});
//
// Failures. An exception thrown by a node's consume() or a source's produce()
// is handled the same way wherever the node runs (pool or own thread, in a
// farm, an ordered farm or a graph that answers actors), as options.on_error
// says:
//   failure::cancel (default): the graph stops, queued elements are dropped,
//     wait() rethrows the exception and completed.error describes it; a graph
//     with an entry actor ends that actor with the same error, and every item
//     still awaited by a requester is answered with an error;
//   failure::skip: the element is dropped and counted (node_metrics::failed,
//     completed.failed); the requester awaiting it, if any, gets the error;
//     options.errors_to, if set, receives a stream::element_failed; the graph
//     goes on.
// Exceptions from on_start and on_stop always cancel (they are not about an
// element).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "troupe/actor/actor.hpp"
#include "troupe/actor/error.hpp"
#include "troupe/detail/tuning.hpp"
#include "troupe/runtime/placement.hpp"

namespace troupe::stream {

class state_backend;  // stream/keyed_state.hpp

/// What a failing element does to its graph (see the top of this header).
enum class failure {
  cancel,  ///< stop the graph (default)
  skip,    ///< drop the element, report it, go on
};

/// Checkpoints of the nodes' state (stream/checkpoint.hpp): off unless
/// `dir` is set. A graph started with a directory that holds a completed
/// checkpoint resumes from the last one.
struct checkpoint_options {
  std::string dir{};                         ///< the job's checkpoint directory ("": no checkpoints)
  std::chrono::milliseconds interval{1000};  ///< from the end of one checkpoint to the start of the next
  std::size_t keep = 2;                      ///< completed checkpoints kept (at least 1)
  /// Unaligned barriers: a node takes its snapshot as soon as a checkpoint's
  /// barrier shows on any of its inputs, passes it on at once, and saves
  /// the elements still queued before the barriers on its inputs with its
  /// state (they are replayed into it on recovery) instead of waiting for
  /// the barrier to reach it at its place on every input. For backpressured
  /// graphs, whose queues would hold barriers back. A node whose input type
  /// is not stream::storable aligns as without it.
  bool unaligned = false;
  /// Where nodes' keyed states live (stream/keyed_state.hpp): nullptr, in
  /// memory (saved into the checkpoint files); or a state backend such as
  /// troupe::rocksdb::backend() (troupe/rocksdb.hpp), whose files go under
  /// `dir` (checkpoints hold links to them, so only what changed since the
  /// last one is written).
  std::shared_ptr<state_backend> backend{};
};

/// How a graph's checkpoints have gone so far (graph::checkpoints()).
struct checkpoint_stats {
  std::uint64_t completed = 0;                 ///< checkpoints completed since the graph started
  std::uint64_t last_id = 0;                   ///< the last one completed (0: none; ids go on from a resumed one)
  std::chrono::nanoseconds last_duration{0};   ///< its start (the trigger) to its completion
  std::chrono::nanoseconds max_duration{0};    ///< the longest so far
  std::chrono::nanoseconds total_duration{0};  ///< of all of them (the mean: / completed)
  std::uint64_t last_bytes = 0;                ///< this process's file of it
};

/// How a graph with a checkpoint directory started (graph::recovery()).
struct recovery {
  std::uint64_t restored = 0;          ///< the checkpoint it resumed from (0: it started afresh)
  std::vector<std::string> skipped{};  ///< why newer checkpoint files were not used (corrupt, partial)
  /// Stages resumed with another number of replicas than the checkpoint's
  /// ("'counter': 3 -> 5 replicas"): their keyed state was split anew by key group.
  std::vector<std::string> rescaled{};
};

struct options {
  std::size_t capacity =
      troupe::detail::tuning::channel_capacity;       ///< slots per channel (rounded up to a power of two)
  std::size_t batch = troupe::detail::tuning::batch;  ///< elements a node handles per activation
  troupe::placement placement{};                      ///< where the nodes run (default: the pool)
  failure on_error = failure::cancel;
  actor results_to{};          ///< graphs that answer actors: results of plain sends go here instead of to their sender
  actor notify{};              ///< receives stream::completed at the end
  actor errors_to{};           ///< failure::skip: receives a stream::element_failed per dropped element
  std::string metrics_json{};  ///< file the final metrics are written to ("" = none)
  std::size_t latency_sample =
      troupe::detail::tuning::latency_sample;  ///< sinks measure one stamped element in this many
  checkpoint_options checkpoint{};             ///< fault tolerance (stream/checkpoint.hpp)
};

/// Sent to a graph's entry: its input has ended.
struct end_of_stream {};

/// Sent to options.notify when a graph has finished. `error` is errc::none
/// when it ended normally (or was cancelled by cancel()); else the failure
/// that stopped it (errc::unhandled_exception, naming the node).
struct completed {
  troupe::error error{};
  std::uint64_t failed = 0;  ///< elements dropped under failure::skip
};

/// Sent to options.errors_to for each element dropped under failure::skip.
struct element_failed {
  std::string node{};  ///< the node's name (its kind, or its type)
  std::size_t replica = 0;
  troupe::error error{};
};

}  // namespace troupe::stream
