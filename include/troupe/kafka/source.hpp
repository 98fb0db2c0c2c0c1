// source.hpp: a stream source reading a Kafka topic (the optional
// troupe::kafka module).
//   namespace kafka = troupe::kafka;
//   auto in = kafka::source<txn>({.client = {.brokers = "k1:9092"}, .topic = "cards", .group = "fraud"},
//                                [](const kafka::message& m) { return parse_txn(m.value); });
//   troupe::farm{std::move(in), 4}   // four consumers, the partitions spread over them
//   auto timed = kafka::timed_source<txn>(cfg, decode);  // watermarks from record timestamps
// A decoder is T(const message&), or void(const message&, stream::emitter<T>&)
// for zero or several elements per record; what it throws fails the graph
// (or is skipped, under failure::skip) with the record's partition and
// offset named.
//
// Partitions. assignment::static_partitions (the default): replica r of R
// reads the topic's partitions p with p % R == r, fixed for the run (a
// replica without one ends at once). assignment::consumer_group: the
// replicas, and every other process with the same `group`, join the
// consumer group, and Kafka spreads the partitions and moves them when a
// member comes or goes.
//
// Exactly once with checkpoints: a replica's state is the next offset of
// each partition it reads; restored, it reads on from there, whatever the
// group has committed. Offsets are never auto-committed: when a checkpoint
// completes the source commits its offsets to `group` (if one is named), so
// that a fresh start of the job, and the group's lag, go on from there.
// Started afresh, a partition starts at the group's committed offset, or as
// `start` says where there is none. A partition revoked by a rebalance
// (consumer_group) is read no further at once, and handed over to the group
// only after the next checkpoint, which holds its last offset, has completed
// and that offset is committed: its new owner starts right after what this
// source emitted, and what it emitted is in this graph's checkpointed state
// (no loss, no duplicates; the rebalance waits up to a checkpoint interval).
// The group uses the cooperative-sticky assignor unless the properties say
// otherwise: only the partitions that move stop. (Under an eager assignor
// the commit at the handover falls inside the rebalance; Kafka accepts it,
// librdkafka's mock cluster does not, and there the new owner starts from
// the checkpoint before: at least once.)
// Without checkpoints the source commits its offsets every `commit_every`,
// on a revoke, and at the end (at least once). Under consumer_group a member
// commits with checkpoints only every `commit_every` too (a commit that
// meets a rebalance costs the whole assignment); a member that dies leaves
// its partitions to the others from its last commit: they read again what
// it emitted after that (at least once for those).
//
// Event time (timed_source): the record timestamps (milliseconds since the
// epoch) are the elements' times; each partition's watermark is the largest
// timestamp read from it minus `watermark_lag`; the source's is the minimum
// over its partitions, leaving out a partition that has sent nothing for
// `idle_after` (idle), until it sends again; when every partition is idle,
// the minimum over those that have sent anything.
//
// No thread of its own: librdkafka fetches, and wakes the node when
// records are there; the node never blocks its worker.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/kafka/client.hpp"
#include "troupe/stream/node.hpp"
#include "troupe/stream/state.hpp"

namespace troupe::kafka {

enum class assignment {
  static_partitions,  ///< partition p to replica p % replicas, for the whole run
  consumer_group,     ///< Kafka's consumer group assigns and rebalances
};

/// Where a partition starts when no checkpoint says.
enum class start_from {
  committed,  ///< the group's committed offset, else the earliest
  earliest,   ///< the oldest record the topic keeps
  latest,     ///< what comes after the source started
};

struct source_config {
  client_config client{};
  std::string topic;
  std::string group{};  ///< group.id: offsets are committed there (required by consumer_group)
  assignment assign = assignment::static_partitions;
  start_from start = start_from::committed;
  int batch = 512;  ///< records taken from librdkafka at once (1 to 1,000,000)
  /// End once every partition has been read up to where it ended when the
  /// source started (static_partitions only); false: read on.
  bool bounded = false;
  /// Optional: true ends the stream, asked between batches and at least
  /// every `poll`.
  std::function<bool()> stop{};
  std::chrono::milliseconds poll{100};
  /// timed_source: watermark = largest timestamp - this, per partition.
  std::chrono::milliseconds watermark_lag{0};
  /// timed_source: a partition silent this long holds the watermark back no
  /// more (0: never idle).
  std::chrono::milliseconds idle_after{0};
  /// How often offsets are committed to the group without checkpoints, and,
  /// under consumer_group, with them (else at every completed checkpoint).
  std::chrono::milliseconds commit_every{1000};
};

/// A partition's next offset (a source's state, a commit).
struct offset {
  std::int32_t partition = 0;
  std::int64_t next = 0;

  void save(stream::state_writer& out) const {
    out.write(partition);
    out.write(next);
  }
  void load(stream::state_reader& in) {
    in.read(partition);
    in.read(next);
  }
};

namespace detail {

/// A partition a replica reads (or has been revoked and not yet handed over).
struct partition_state {
  bool assigned = false;  // read by this replica now
  bool revoked = false;   // revoked by a rebalance: read no further, handed over after a checkpoint
  std::int64_t next = 0;  // the offset after the last record emitted (or where it starts)
  std::int64_t end = -1;  // bounded: where the partition ended when the source started
  std::int64_t max_time = -1;
  std::int64_t last_seen_ns = 0;  // steady clock: its last record (idleness)
};

/// Records taken from librdkafka, valid while the batch lives.
struct fetched {
  std::vector<message> messages;
  std::shared_ptr<void> owner;  // the librdkafka messages
};

/// The librdkafka side of a source replica: the consumer, its partitions and
/// their offsets, rebalances and commits.
class consumer {
 public:
  /// Connects and takes this replica's partitions (static_partitions:
  /// their offsets from `restored`, the group or `start`), or joins the
  /// group; `wake` is called from librdkafka's threads when records come,
  /// and every `poll` when the node must look at the time or cfg.stop
  /// (`ticks`); `timestamps`: messages carry their timestamps.
  consumer(const source_config& cfg, std::size_t replica, std::size_t replicas, std::vector<offset> restored,
           bool checkpointing, bool ticks, bool timestamps, std::function<void()> wake);
  ~consumer();
  consumer(const consumer&) = delete;
  consumer& operator=(const consumer&) = delete;

  /// The partition's state if this replica reads it now (nullptr else).
  partition_state* find(std::int32_t p) noexcept {
    return p >= 0 && static_cast<std::size_t>(p) < parts_.size() && parts_[static_cast<std::size_t>(p)].assigned &&
                   !parts_[static_cast<std::size_t>(p)].revoked
               ? &parts_[static_cast<std::size_t>(p)]
               : nullptr;
  }
  const std::vector<partition_state>& partitions() const noexcept { return parts_; }
  /// The next batch, if records are there (never blocks; serves rebalances).
  bool take(fetched& out);
  /// Every partition read up to its end (bounded).
  bool at_end() const noexcept;
  /// With nothing queued: moves each position on to librdkafka's, past
  /// what a consumer never sees (transaction markers), so that a bounded
  /// source of a transactional topic reaches its end.
  void catch_up();
  /// The offsets of the partitions it reads (its state).
  std::vector<offset> positions() const;
  /// A checkpoint's snapshot: its positions, and, for the revoked
  /// partitions, the checkpoint `id` that hands them over.
  std::vector<offset> snapshot(std::uint64_t id);
  /// Checkpoint `id` has completed, with `offsets`: commits them, and hands
  /// over the partitions it held the last offsets of.
  void completed(std::uint64_t id, const std::vector<offset>& offsets);
  /// Commits the positions if commit_every has passed since the last
  /// commit (without checkpoints), or now, waiting for the broker.
  void commit_positions(bool now);

 private:
  friend struct consumer_access;
  struct impl;
  std::unique_ptr<impl> impl_;
  std::vector<partition_state> parts_;
};

[[noreturn]] void throw_decode_error(const source_config& cfg, const message& m, const char* what);
void check(const source_config& cfg);
std::int64_t steady_ns() noexcept;

}  // namespace detail

template <class T, class Decode, bool Timed>
class source_node final : public stream::node<void, T> {
 public:
  static constexpr const char* kind = "kafka_source";
  static constexpr bool waits = true;
  static constexpr bool emits_watermarks = Timed;

  source_node(source_config cfg, Decode decode) : cfg_{std::move(cfg)}, decode_{std::move(decode)} {
    detail::check(cfg_);
  }
  /// A copy before start (each replica starts its own consumer).
  source_node(const source_node& o) : stream::node<void, T>{o}, cfg_{o.cfg_}, decode_{o.decode_} {}
  source_node(source_node&&) noexcept = default;
  source_node& operator=(const source_node&) = delete;
  source_node& operator=(source_node&&) = delete;
  ~source_node() = default;

  void on_start() {
    const bool ticks = static_cast<bool>(cfg_.stop) || (Timed && cfg_.idle_after.count() > 0);
    reader_ =
        std::make_unique<detail::consumer>(cfg_, this->replica_index(), this->replica_count(), std::move(restored_),
                                           this->checkpointing(), ticks, Timed, [w = this->waker()] { w.wake(); });
  }

  bool produce() {
    for (;;) {
      while (next_ < batch_.messages.size()) {
        const message& m = batch_.messages[next_++];
        detail::partition_state* p = reader_->find(m.partition);
        if (p == nullptr || m.offset < p->next) continue;  // revoked, or read already
        p->next = m.offset + 1;
        if constexpr (Timed) {
          if (m.timestamp_ms > p->max_time) p->max_time = m.timestamp_ms;
          p->last_seen_ns = batch_ns_;
        }
        emit(m);
        return true;
      }
      if (next_ != 0) {
        batch_ = {};
        next_ = 0;
      }
      if constexpr (Timed) advance_watermark();
      if ((cfg_.bounded && reader_->at_end()) || (cfg_.stop && cfg_.stop())) return false;
      if (cfg_.assign == assignment::static_partitions && reader_->partitions().empty()) return false;  // none here
      if (!this->checkpointing()) reader_->commit_positions(false);
      if (!reader_->take(batch_)) {
        if (cfg_.bounded) {
          reader_->catch_up();
          if (reader_->at_end()) return false;
        }
        this->hold();
        return true;
      }
      if constexpr (Timed) batch_ns_ = detail::steady_ns();
    }
  }

  void on_stop() {
    if (!reader_) return;
    batch_ = {};
    stopped_ = true;
    restored_ = reader_->positions();            // its final state
    if (this->hears_final_checkpoint()) return;  // committed with the graph's last checkpoint
    reader_->commit_positions(true);
    reader_.reset();
  }

  void snapshot(stream::state_writer& out) {
    if (!reader_) {  // resumed as ended, or ended: the offsets it had
      out.write(restored_);
      return;
    }
    std::vector<offset> commit = reader_->snapshot(out.checkpoint());
    out.write(reader_->positions());
    if (out.checkpoint() != 0) commits_.emplace_back(out.checkpoint(), std::move(commit));
  }
  void restore(stream::state_reader& in) { in.read(restored_); }
  void on_checkpoint_complete(std::uint64_t id) {
    if (!reader_) return;
    if (stopped_) {  // the graph's last checkpoint: everything read is done
      reader_->commit_positions(true);
      reader_.reset();
      return;
    }
    std::vector<offset> offsets;
    std::uint64_t at = 0;
    while (!commits_.empty() && commits_.front().first <= id) {
      at = commits_.front().first;
      offsets = std::move(commits_.front().second);
      commits_.pop_front();
    }
    if (at != 0) reader_->completed(at, offsets);
  }

 private:
  void emit(const message& m) {
    try {
      if constexpr (std::is_invocable_v<Decode&, const message&, stream::emitter<T>&>) {
        decode_(m, static_cast<stream::emitter<T>&>(*this));
      } else {
        static_assert(std::is_invocable_r_v<T, Decode&, const message&>,
                      "troupe::kafka::source: the decoder is T(const message&) or "
                      "void(const message&, stream::emitter<T>&)");
        this->send_next(decode_(m));
      }
    } catch (const kafka_error&) {
      throw;
    } catch (const std::exception& e) {
      detail::throw_decode_error(cfg_, m, e.what());
    }
  }

  /// The minimum over the partitions not idle of (largest timestamp - lag);
  /// when every partition is idle, over those that have sent something.
  void advance_watermark() {
    const std::int64_t now = detail::steady_ns();
    const std::int64_t idle = std::chrono::nanoseconds{cfg_.idle_after}.count();
    constexpr std::int64_t none = std::numeric_limits<std::int64_t>::max();
    std::int64_t active = none, seen = none;
    for (const auto& p : reader_->partitions()) {
      if (!p.assigned || p.revoked) continue;
      if (p.max_time >= 0) seen = std::min(seen, p.max_time);
      if (idle > 0 && now - (p.last_seen_ns != 0 ? p.last_seen_ns : started_ns()) > idle) continue;
      if (p.max_time < 0) return;  // a partition not heard from holds it back
      active = std::min(active, p.max_time);
    }
    const std::int64_t low = (active != none ? active : seen) - cfg_.watermark_lag.count();
    if (low > 0 && low < none - cfg_.watermark_lag.count()) this->emit_watermark(static_cast<std::uint64_t>(low));
  }
  std::int64_t started_ns() {
    if (started_ns_ == 0) started_ns_ = detail::steady_ns();
    return started_ns_;
  }

  source_config cfg_;
  Decode decode_;
  std::unique_ptr<detail::consumer> reader_;
  detail::fetched batch_;
  std::size_t next_ = 0;  // the next record of batch_
  std::int64_t batch_ns_ = 0;
  std::int64_t started_ns_ = 0;
  std::vector<offset> restored_;  // restored (before on_start), or its final offsets (after on_stop)
  bool stopped_ = false;
  std::deque<std::pair<std::uint64_t, std::vector<offset>>> commits_;  // per checkpoint: what to commit
};

/// A source of T decoded from each record by `decode`.
template <class T, class Decode>
source_node<T, Decode, false> source(source_config cfg, Decode decode) {
  return source_node<T, Decode, false>{std::move(cfg), std::move(decode)};
}

/// The same, with watermarks from the record timestamps (milliseconds since
/// the epoch: the unit of the elements' times downstream).
template <class T, class Decode>
source_node<T, Decode, true> timed_source(source_config cfg, Decode decode) {
  return source_node<T, Decode, true>{std::move(cfg), std::move(decode)};
}

/// A source of each record's value as a string.
inline auto text_source(source_config cfg) {
  return source<std::string>(std::move(cfg), [](const message& m) { return std::string{m.value}; });
}

}  // namespace troupe::kafka
