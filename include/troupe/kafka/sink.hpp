// sink.hpp: a stream sink producing to a Kafka topic (the optional
// troupe::kafka module).
//   namespace kafka = troupe::kafka;
//   auto out = kafka::sink<alert>({.client = {.brokers = "k1:9092"}, .topic = "alerts"},
//                                 [](const alert& a, kafka::record& r) { r.key = a.card; r.value = a.to_json(); });
//   auto lines = kafka::text_sink({.topic = "counts", .mode = kafka::delivery::at_least_once});
// An encoder is R(const T&) with R a std::string or std::string_view (the
// record's value, no key), or void(const T&, record&) (key, value,
// partition).
//
// The producer is idempotent: a record that librdkafka sends again after a
// lost answer is stored once, in order.
// delivery::exactly_once (the default, with checkpoints): what arrives
// between two barriers is kept, and saved with the checkpoint at the second
// one; once that checkpoint completes it is produced in one Kafka
// transaction (transactional.id `<transactional_id>-<replica>`), which also
// commits a marker (the run and the checkpoint) as an offset of the group
// `<transactional_id>-<replica>`. Started from a checkpoint, the sink reads
// the marker and produces again, in a transaction, only what the marker
// says was not committed. Consumers that read with isolation.level
// read_committed see each record once. (librdkafka's mock cluster keeps no
// transactional offsets: there, what a crash interrupted is produced again,
// at least once; see docs/connectors.md.) Output appears when a checkpoint
// completes; the memory it takes is what arrives in an interval, twice.
// delivery::at_least_once: each element is produced at once; a barrier
// waits until the brokers have acknowledged everything before it.
// Without checkpoints either mode produces as elements come, and the end of
// the stream waits for the last acknowledgement.
// What the brokers refuse for good (an unknown topic, a record too large,
// authorization) fails the graph with librdkafka's words.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/kafka/client.hpp"
#include "troupe/stream/node.hpp"
#include "troupe/stream/state.hpp"

namespace troupe::kafka {

enum class delivery {
  exactly_once,   ///< produced in a transaction when the checkpoint that holds it completes
  at_least_once,  ///< produced at once; a recovery may produce some again
};

struct sink_config {
  client_config client{};
  std::string topic;
  delivery mode = delivery::exactly_once;
  /// exactly_once: replica r's transactional.id is "<transactional_id>-<r>"
  /// ("" : "troupe-<topic>"); one job per id (a second one fences the first).
  std::string transactional_id{};
};

namespace detail {

/// The librdkafka side of a sink: an idempotent (or transactional) producer.
class producer {
 public:
  /// `transactional_id` empty: idempotent only.
  producer(const sink_config& cfg, std::string transactional_id);
  ~producer();
  producer(const producer&) = delete;
  producer& operator=(const producer&) = delete;

  /// Produces asynchronously (waits while librdkafka's queue is full).
  /// Throws kafka_error if a delivery has failed since.
  void produce(std::string_view key, std::string_view value, std::int32_t partition);
  /// Waits until every record so far is acknowledged; kafka_error if one failed.
  void flush();
  /// Transactional: begins a transaction.
  void begin();
  /// Transactional: commits the transaction with the marker (run, checkpoint).
  void commit(std::uint64_t run, std::uint64_t checkpoint);
  /// Transactional: the last marker committed, (0, 0) if none.
  std::pair<std::uint64_t, std::uint64_t> committed_marker();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

void check(const sink_config& cfg);
/// Replica r's transactional.id.
std::string transactional_id(const sink_config& cfg, std::size_t replica);

}  // namespace detail

/// What a Kafka sink does, for a node of its own (sink_node) or inside
/// another sink node that forwards its calls: start from on_start, write
/// from consume, stop from on_stop, and snapshot, restore and complete from
/// the node's checkpoint members.
template <class T, class Encode>
class sink_writer {
 public:
  sink_writer(sink_config cfg, Encode encode) : cfg_{std::move(cfg)}, encode_{std::move(encode)} {
    detail::check(cfg_);
  }
  /// A copy before start (each replica starts its own).
  sink_writer(const sink_writer& o) : cfg_{o.cfg_}, encode_{o.encode_} {}
  sink_writer& operator=(const sink_writer&) = delete;
  ~sink_writer() = default;

  const sink_config& config() const noexcept { return cfg_; }

  /// Connects; `replica` names the transactional id, `checkpointing`
  /// whether exactly_once waits for checkpoints (node::checkpointing()),
  /// `final_commit` whether the end of the stream waits for the graph's last
  /// checkpoint (node::hears_final_checkpoint()).
  void start(std::size_t replica, bool checkpointing, bool final_commit) {
    replica_ = replica;
    held_ = cfg_.mode == delivery::exactly_once && checkpointing;
    final_commit_ = final_commit;
    ++run_;  // 1 afresh, one more than the run restored
    open();
    if (!epochs_.empty()) commit_epochs(all, true);  // restored: what the marker lacks
  }

  void write(const T& x) {
    rec_.key.clear();
    rec_.value.clear();
    rec_.partition = -1;
    encode(x, rec_);
    if (!held_) {
      pub_->produce(rec_.key, rec_.value, rec_.partition);
      return;
    }
    cur_.add(rec_);
  }

  void stop() {
    close_epoch(0);
    stopped_ = true;
    // Under checkpoints in one process the end of the stream waits, kept in
    // the node's final state, for the graph's last checkpoint (complete());
    // else it goes out now.
    if (held_ && final_commit_) return;
    if (held_) commit_epochs(all, false);
    pub_->flush();
  }

  void snapshot(stream::state_writer& out) {
    out.write(run_);
    if (!pub_) {  // resumed as ended (it never started): its state as restored
      out.write(epochs_);
      return;
    }
    if (!held_) {
      pub_->flush();  // everything before the barrier is stored
      out.write(std::vector<epoch>{});
      return;
    }
    if (out.checkpoint() != 0) close_epoch(out.checkpoint());
    out.write(epochs_);
  }
  void restore(stream::state_reader& in) {
    in.read(run_);
    in.read(epochs_);
  }
  void complete(std::uint64_t id) {
    if (!pub_) {  // resumed as ended: it never started, and this is the last one
      if (epochs_.empty()) return;
      held_ = true;
      ++run_;
      open();
      commit_epochs(all, true);  // the end of the stream too
      return;
    }
    if (held_) commit_epochs(stopped_ ? all : id, false);
  }

  /// What arrived between two barriers (public for the state writer).
  struct epoch {
    std::uint64_t run = 0;         // the run that received it
    std::uint64_t checkpoint = 0;  // the checkpoint at its end (0: the stream's end)
    std::vector<std::uint64_t> ends;
    std::vector<std::uint32_t> key_sizes;
    std::vector<std::int32_t> partitions;
    std::string data;  // key then value, record after record

    void add(const record& r) {
      data.append(r.key);
      data.append(r.value);
      key_sizes.push_back(static_cast<std::uint32_t>(r.key.size()));
      partitions.push_back(r.partition);
      ends.push_back(data.size());
    }
    void save(stream::state_writer& out) const {
      out.write(run);
      out.write(checkpoint);
      out.write(ends);
      out.write(key_sizes);
      out.write(partitions);
      out.write(data);
    }
    void load(stream::state_reader& in) {
      in.read(run);
      in.read(checkpoint);
      in.read(ends);
      in.read(key_sizes);
      in.read(partitions);
      in.read(data);
    }
  };

 private:
  void open() {
    pub_ = std::make_unique<detail::producer>(cfg_, held_ ? detail::transactional_id(cfg_, replica_) : std::string{});
  }

  /// Fills r from x.
  void encode(const T& x, record& r) {
    if constexpr (std::is_invocable_v<Encode&, const T&, record&>) {
      encode_(x, r);
    } else {
      static_assert(std::is_invocable_v<Encode&, const T&>,
                    "troupe::kafka::sink: the encoder is R(const T&) with R a string or string_view, or "
                    "void(const T&, kafka::record&)");
      using R = std::decay_t<std::invoke_result_t<Encode&, const T&>>;
      static_assert(std::is_same_v<R, std::string_view> || std::is_same_v<R, std::string>,
                    "troupe::kafka::sink: the encoder returns a string or string_view");
      r.value.append(encode_(x));
    }
  }

  void close_epoch(std::uint64_t checkpoint) {
    if (cur_.ends.empty()) return;
    cur_.run = run_;
    cur_.checkpoint = checkpoint;
    epochs_.push_back(std::move(cur_));
    cur_ = epoch{};
  }

  static constexpr std::uint64_t all = std::uint64_t(-1);  // every epoch, the stream's end too

  /// Produces the epochs up to checkpoint `upto` (all: the stream's end
  /// too) in one transaction, with the last one's marker; `skip_committed`:
  /// leaves out those the marker says are in Kafka already (after a restore).
  void commit_epochs(std::uint64_t upto, bool skip_committed) {
    std::pair<std::uint64_t, std::uint64_t> done{0, 0};
    if (skip_committed) done = pub_->committed_marker();
    std::size_t n = 0;
    while (n < epochs_.size() && (epochs_[n].checkpoint != 0 ? epochs_[n].checkpoint <= upto : upto == all)) ++n;
    if (n == 0) return;
    pub_->begin();
    for (std::size_t i = 0; i < n; ++i) {
      const epoch& e = epochs_[i];
      if (skip_committed && std::pair{e.run, marker_checkpoint(e)} <= done) continue;
      std::uint64_t from = 0;
      for (std::size_t j = 0; j < e.ends.size(); ++j) {
        const std::string_view all{e.data};
        pub_->produce(all.substr(from, e.key_sizes[j]),
                      all.substr(from + e.key_sizes[j], e.ends[j] - from - e.key_sizes[j]), e.partitions[j]);
        from = e.ends[j];
      }
    }
    pub_->commit(epochs_[n - 1].run, marker_checkpoint(epochs_[n - 1]));
    epochs_.erase(epochs_.begin(), epochs_.begin() + static_cast<std::ptrdiff_t>(n));
  }
  /// The stream's end (checkpoint 0) comes after every checkpoint of its run.
  static std::uint64_t marker_checkpoint(const epoch& e) {
    return e.checkpoint != 0 ? e.checkpoint : std::uint64_t(-1) / 2;
  }

  sink_config cfg_;
  Encode encode_;
  std::unique_ptr<detail::producer> pub_;
  std::size_t replica_ = 0;
  std::uint64_t run_ = 0;
  bool held_ = false;  // exactly once under checkpoints: kept until they complete
  bool final_commit_ = false;
  bool stopped_ = false;
  record rec_;
  epoch cur_;
  std::vector<epoch> epochs_;  // closed, not yet committed
};

/// A sink node producing each element to a Kafka topic (see the top of
/// this header).
template <class T, class Encode>
class sink_node final : public stream::node<T, void> {
 public:
  static constexpr const char* kind = "kafka_sink";
  sink_node(sink_config cfg, Encode encode) : w_{std::move(cfg), std::move(encode)} {}

  void on_start() { w_.start(this->replica_index(), this->checkpointing(), this->hears_final_checkpoint()); }
  void consume(T& x) { w_.write(x); }
  void on_stop() { w_.stop(); }
  void snapshot(stream::state_writer& out) { w_.snapshot(out); }
  void restore(stream::state_reader& in) { w_.restore(in); }
  void on_checkpoint_complete(std::uint64_t id) { w_.complete(id); }

 private:
  sink_writer<T, Encode> w_;
};

/// A sink producing each element as encoded by `encode`.
template <class T, class Encode>
sink_node<T, Encode> sink(sink_config cfg, Encode encode) {
  return sink_node<T, Encode>{std::move(cfg), std::move(encode)};
}

/// A sink producing each string as a record's value.
inline auto text_sink(sink_config cfg) {
  return sink<std::string>(std::move(cfg), [](const std::string& s) { return std::string_view{s}; });
}

}  // namespace troupe::kafka
