// checkpoint.hpp: fault tolerance for stream graphs. A graph spawned with a
// checkpoint directory saves its nodes' state while it runs; killed at any
// moment and spawned again with the same directory, it resumes from the last
// completed checkpoint, and its exactly-once sinks leave the output of a run
// without failures. See docs/fault-tolerance.md.
//   namespace st = troupe::stream;
//   auto g = troupe::spawn_pattern(sys, troupe::pipeline{
//       st::file_lines("in.txt"), troupe::farm{split_words{}, 2}, count_words{}, st::file_sink("out.txt")},
//       {.checkpoint = {.dir = "ckpt", .interval = std::chrono::seconds{1}}});
//   g.wait();
//
// What a node does (state.hpp has the writer and reader):
//   void snapshot(stream::state_writer&)    its state at each checkpoint
//   void restore(stream::state_reader&)     before on_start, when resuming
//   void on_checkpoint_complete(uint64_t)   a checkpoint is stored: commit
// A node without them keeps no state across a restart. Every source of a
// checkpointing graph must be replayable: its state is its position, and
// restore() seeks to it (replayable_source below, or any source with
// snapshot and restore).
//
// How it runs: every `interval` the sources snapshot their position and
// send a barrier after the elements before it; a node with several inputs
// takes no more from an input whose barrier has come until the barrier is on
// every input (aligned), then snapshots its state and sends the barrier on.
// The state is copied into memory there (the node waits for that only); the
// checkpointer's thread writes the file. A checkpoint is complete once every
// node has passed its barrier and the file is on disk; then sinks commit
// what they pre-committed at the barrier. A runner that has ended keeps its
// final state for later checkpoints (it resumes as ended). A graph that
// ends normally (in one process) takes a last checkpoint once every node
// has ended, and its nodes with on_checkpoint_complete hear of it after
// their on_stop: a sink that commits only with checkpoints commits the end
// of the stream there. Then it removes its checkpoints: the job is done.
//
// Guarantees: the state of every node after recovery is that of the last
// completed checkpoint (exactly once); a sink with two-phase commit
// (file_sink) gives exactly-once output; any other sink sees the elements
// after that checkpoint again (at least once).
//
// A graph split across processes (net::split) takes checkpoints the same
// way, every rank with the same directory (one all ranks see): each rank
// writes its part, rank 0 completes the checkpoint, and rerunning every rank
// resumes them all from it.
//
// Unaligned barriers (options.checkpoint.unaligned): a node snapshots at
// the first barrier it sees and saves the elements queued before the
// others, for graphs under backpressure.
//
// Keyed state (node::keyed, stream/keyed_state.hpp) is saved by the engine,
// by key groups, on the heap or in a state backend (options.checkpoint.
// backend: troupe::rocksdb::backend(), incremental).
//
// Not yet: graphs fed by an entry actor, restoring a farm with another
// number of replicas (docs/fault-tolerance.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/stream/node.hpp"
#include "troupe/stream/options.hpp"
#include "troupe/stream/state.hpp"

namespace troupe::stream {

/// The checkpoint a graph with checkpoint directory `dir` would resume from
/// (restored 0: it would start afresh), and why newer ones would be
/// skipped; `rank` of `ranks` for a split graph. For an application that
/// must know before it spawns the graph (to start an output afresh).
/// Throws checkpoint_error for a directory a graph could not use.
recovery checkpoint_to_resume(const std::string& dir, std::size_t rank = 0, std::size_t ranks = 1);

/// The source interface of checkpointing graphs (and of the connectors):
/// a source that reports its position and seeks to it. Derive, and define
///   bool produce();                        // as any source
///   Position position() const;             // where the next element comes from
///   void seek(const Position& p);          // restart there (before on_start)
/// Position is anything state_writer can write (an offset, a counter, a map
/// of partitions to offsets).
template <class Out, class Position = std::uint64_t>
class replayable_source : public node<void, Out> {
 public:
  using position_type = Position;
  virtual Position position() const = 0;
  virtual void seek(const Position& p) = 0;

  void snapshot(state_writer& out) const { out.write(position()); }
  void restore(state_reader& in) {
    Position p{};
    in.read(p);
    seek(p);
  }

 protected:
  replayable_source() = default;
  replayable_source(const replayable_source&) = default;
  replayable_source& operator=(const replayable_source&) = default;
  ~replayable_source() = default;
};

/// A replayable generator: f(i) for i = 0, 1, 2, ... until it returns
/// nullopt; its position is i.
template <class F, class Out>
class generator_node final : public replayable_source<Out> {
 public:
  static constexpr const char* kind = "generator";
  explicit generator_node(F f) : f_{std::move(f)} {}
  bool produce() {
    std::optional<Out> v = f_(next_);
    if (!v) return false;
    ++next_;
    this->send_next(std::move(*v));
    return true;
  }
  std::uint64_t position() const override { return next_; }
  void seek(const std::uint64_t& p) override { next_ = p; }

 private:
  F f_;
  std::uint64_t next_ = 0;
};
template <class F>
auto generator(F f) {
  using opt = std::decay_t<std::invoke_result_t<F&, std::uint64_t>>;
  return generator_node<F, typename opt::value_type>{std::move(f)};
}

/// The lines of a text file ('\n' ends a line, and is not part of it); its
/// position is the byte offset of the next line. A file that cannot be
/// opened ends the graph with an error naming it.
class file_lines final : public replayable_source<std::string> {
 public:
  static constexpr const char* kind = "file_lines";
  explicit file_lines(std::string path) : path_{std::move(path)} {}
  file_lines(const file_lines& o) : replayable_source{o}, path_{o.path_}, offset_{o.offset_} {}
  file_lines& operator=(const file_lines&) = delete;
  ~file_lines();

  void on_start();
  bool produce();
  std::uint64_t position() const override { return offset_; }
  void seek(const std::uint64_t& p) override { offset_ = p; }

 private:
  std::string path_;
  std::uint64_t offset_ = 0;
  std::FILE* f_ = nullptr;
  char* buf_ = nullptr;
  std::size_t cap_ = 0;
};

/// An exactly-once sink: each element (a line) goes to `path` followed by
/// '\n', in two phases. It writes to a part file beside `path`; at a
/// checkpoint's barrier it flushes that part to disk (pre-commit) and starts
/// the next; when the checkpoint is complete it appends the part to `path`
/// (commit). On recovery it finishes the commits of the restored checkpoint,
/// cuts `path` back to what that checkpoint committed and deletes other
/// parts (abort), so `path` holds each line once. A graph without
/// checkpoints commits everything at its end. Starting afresh (no checkpoint
/// to resume from), it empties `path`. A replica other than the first writes
/// `path` + "." + its index.
class file_sink final : public node<std::string, void> {
 public:
  static constexpr const char* kind = "file_sink";
  explicit file_sink(std::string path) : path_{std::move(path)} {}
  file_sink(const file_sink& o) : node{o}, path_{o.path_} {}
  file_sink& operator=(const file_sink&) = delete;
  ~file_sink();

  void on_start();
  void consume(std::string& line) {
    if (std::fwrite(line.data(), 1, line.size(), part_) != line.size() || std::fputc('\n', part_) == EOF) failed();
    part_bytes_ += line.size() + 1;
  }
  void on_stop();
  void snapshot(state_writer& out);
  void restore(state_reader& in);
  void on_checkpoint_complete(std::uint64_t id);

  /// A pre-committed part (public for the state writer).
  struct part {
    std::uint64_t checkpoint = 0, index = 0, bytes = 0;
    void save(state_writer& out) const {
      out.write(checkpoint);
      out.write(index);
      out.write(bytes);
    }
    void load(state_reader& in) {
      in.read(checkpoint);
      in.read(index);
      in.read(bytes);
    }
  };

 private:
  std::string target() const;
  std::string part_path(std::uint64_t index) const;
  void open_part();
  void close_part();
  void commit(const part& p);
  [[noreturn]] void failed() const;

  std::string path_;
  std::FILE* part_ = nullptr;
  std::uint64_t part_index_ = 0;  // the part being written
  std::uint64_t part_bytes_ = 0;
  std::uint64_t committed_ = 0;  // bytes of `target()` that are committed
  std::vector<part> pending_;    // pre-committed, oldest first
  bool restored_ = false;
};

}  // namespace troupe::stream
