// sink.hpp: a stream sink publishing to NATS JetStream (the optional
// troupe::nats module).
//   namespace nats = troupe::nats;
//   auto out = nats::sink<alert>({.subject = "alerts"}, [](const alert& a) { return a.to_json(); });
//   auto lines = nats::text_sink({.subject = "counts", .mode = nats::delivery::at_least_once});
// An encoder is R(const T&) with R a std::string or std::string_view (the
// message's data), or void(const T&, std::string& data).
//
// delivery::exactly_once (the default, with checkpoints): what arrives
// between two barriers is kept, and saved with the checkpoint at the second
// one; once that checkpoint completes it is published, each message with a
// message id (Nats-Msg-Id) made of the sink's run, the checkpoint and the
// message's place in it. Started from a checkpoint, the sink publishes again
// what that checkpoint held and the server may not have stored: JetStream
// drops a message whose id it has seen within the stream's duplicate window,
// so every message is stored once, provided the stream's duplicate window
// (2 minutes by default) is longer than a failure and its recovery take.
// Output appears when a checkpoint completes (latency: the checkpoint
// interval); the memory it takes is what arrives in an interval, twice.
// delivery::at_least_once: each element is published at once; a barrier
// waits until the server has acknowledged everything before it.
// The end of the stream goes out with the graph's last checkpoint, which
// it takes when every node has ended (stream/checkpoint.hpp), or, in a
// graph split across processes, at the end (what came after the last
// completed checkpoint then is at least once).
// Without checkpoints either mode publishes as elements come, and the end of
// the stream waits for the last acknowledgement.
//
// The server's negative acknowledgements (no stream for the subject, a
// stream full under the "new" discard policy) fail the graph with the
// server's words. A publish unanswered after ack_timeout, or answered "no
// responders" (a server restarting), is sent again: under its message id,
// so the server keeps one.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/nats/client.hpp"
#include "troupe/stream/node.hpp"
#include "troupe/stream/state.hpp"

namespace troupe::nats {

enum class delivery {
  exactly_once,   ///< published when the checkpoint that holds it completes, with message ids
  at_least_once,  ///< published at once; a recovery may send some again
};

struct sink_config {
  connection_config connection{};
  std::string subject;  ///< where each element goes (a stream must capture it)
  delivery mode = delivery::exactly_once;
  int max_pending = 65536;  ///< publishes awaiting the server's acknowledgement, at most (>= 1)
  /// Publishes unanswered this long are sent again.
  std::chrono::milliseconds ack_timeout{5000};
};

namespace detail {

/// The libnats side of a sink: asynchronous publishes and their
/// acknowledgements.
class publisher {
 public:
  explicit publisher(const sink_config& cfg);
  ~publisher();
  publisher(const publisher&) = delete;
  publisher& operator=(const publisher&) = delete;

  /// Publishes asynchronously, with a message id unless `id` is empty.
  /// Throws nats_error if a publish has failed since.
  void publish(std::string_view data, std::string_view id);
  /// Waits until the server has acknowledged every publish so far (sending
  /// again what is unanswered after ack_timeout); nats_error when one
  /// failed, or after connection.give_up_after.
  void wait_acked();
  /// Every publish so far acknowledged (non-blocking; sends again what is
  /// unanswered after ack_timeout). Throws nats_error if one failed.
  bool acked();
  /// Acknowledgements that said "duplicate": messages the server already had.
  std::uint64_t duplicates() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// A token unique to this run of a sink replica, for message ids.
std::string run_token(std::size_t replica);
void check(const sink_config& cfg);

}  // namespace detail

/// What a NATS sink does, for a node of its own (sink_node) or inside
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

  /// Connects; `replica` goes into the message ids, `checkpointing` says
  /// whether exactly_once waits for checkpoints (node::checkpointing()),
  /// `final_commit` whether the end of the stream waits for the graph's last
  /// checkpoint (node::hears_final_checkpoint()).
  void start(std::size_t replica, bool checkpointing, bool final_commit) {
    pub_ = std::make_unique<detail::publisher>(cfg_);
    token_ = detail::run_token(replica);
    held_ = cfg_.mode == delivery::exactly_once && checkpointing;
    final_commit_ = final_commit;
    for (auto& e : epochs_) publish(e);  // restored: the server drops what it has
  }

  void write(const T& x) {
    if (!held_) {
      scratch_.clear();
      encode(x, scratch_);
      pub_->publish(scratch_, {});
      return;
    }
    encode(x, cur_.data);
    cur_.ends.push_back(cur_.data.size());
  }

  void stop() {
    close_epoch(0);
    stopped_ = true;
    // Under checkpoints in one process the end of the stream waits, kept in
    // the node's final state, for the graph's last checkpoint (complete());
    // else it goes out now, and is acknowledged.
    if (held_ && final_commit_) return;
    for (auto& e : epochs_)
      if (!e.published) publish(e);
    pub_->wait_acked();
    epochs_.clear();
  }

  void snapshot(stream::state_writer& out) {
    if (!pub_) {  // resumed as ended (it never started): its state as restored
      out.write(epochs_);
      return;
    }
    if (!held_) {
      pub_->wait_acked();  // everything before the barrier is stored
      out.write(std::vector<epoch>{});
      return;
    }
    if (out.checkpoint() != 0) close_epoch(out.checkpoint());
    // Published epochs go once the server has acknowledged every publish.
    if (pub_->acked()) std::erase_if(epochs_, [](const epoch& e) { return e.published; });
    out.write(epochs_);
  }
  void restore(stream::state_reader& in) { in.read(epochs_); }
  void complete(std::uint64_t id) {
    bool last = stopped_;  // the graph's last checkpoint (after stop)
    if (!pub_) {           // resumed as ended: it never started, and this is the last one
      if (epochs_.empty()) return;
      pub_ = std::make_unique<detail::publisher>(cfg_);
      last = true;
    }
    for (auto& e : epochs_)
      if (!e.published && (stopped_ || e.checkpoint <= id)) publish(e);
    if (last) pub_->wait_acked();  // stored before the checkpoint files go
  }

  /// What arrived between two barriers (public for the state writer).
  struct epoch {
    std::string token;             // the run that received it
    std::uint64_t checkpoint = 0;  // the checkpoint at its end (0: the stream's end)
    std::vector<std::uint64_t> ends;
    std::string data;
    bool published = false;

    void save(stream::state_writer& out) const {
      out.write(token);
      out.write(checkpoint);
      out.write(ends);
      out.write(data);
    }
    void load(stream::state_reader& in) {
      in.read(token);
      in.read(checkpoint);
      in.read(ends);
      in.read(data);
      published = false;
    }
  };

 private:
  /// Appends x's data to buf.
  void encode(const T& x, std::string& buf) {
    if constexpr (std::is_invocable_v<Encode&, const T&, std::string&>) {
      encode_(x, buf);
    } else {
      static_assert(std::is_invocable_v<Encode&, const T&>,
                    "troupe::nats::sink: the encoder is R(const T&) with R a string or string_view, or "
                    "void(const T&, std::string&)");
      using R = std::decay_t<std::invoke_result_t<Encode&, const T&>>;
      static_assert(std::is_same_v<R, std::string_view> || std::is_same_v<R, std::string>,
                    "troupe::nats::sink: the encoder returns a string or string_view");
      buf.append(encode_(x));
    }
  }

  void close_epoch(std::uint64_t checkpoint) {
    if (cur_.ends.empty()) return;
    cur_.token = token_;
    cur_.checkpoint = checkpoint;
    epochs_.push_back(std::move(cur_));
    cur_ = epoch{};
  }

  void publish(epoch& e) {
    std::string id = e.token + "-" + std::to_string(e.checkpoint) + "-";
    const auto base = id.size();
    std::uint64_t from = 0;
    for (std::size_t i = 0; i < e.ends.size(); ++i) {
      id.resize(base);
      id += std::to_string(i);
      pub_->publish(std::string_view{e.data}.substr(from, e.ends[i] - from), id);
      from = e.ends[i];
    }
    e.published = true;
  }

  sink_config cfg_;
  Encode encode_;
  std::unique_ptr<detail::publisher> pub_;
  std::string token_;
  bool held_ = false;  // exactly once under checkpoints: kept until they complete
  bool final_commit_ = false;
  bool stopped_ = false;
  std::string scratch_;
  epoch cur_;
  std::vector<epoch> epochs_;  // closed, not yet known to be stored
};

/// A sink node publishing each element to NATS JetStream (see the top of
/// this header).
template <class T, class Encode>
class sink_node final : public stream::node<T, void> {
 public:
  static constexpr const char* kind = "nats_sink";
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

/// A sink publishing each element as encoded by `encode`.
template <class T, class Encode>
sink_node<T, Encode> sink(sink_config cfg, Encode encode) {
  return sink_node<T, Encode>{std::move(cfg), std::move(encode)};
}

/// A sink publishing each string as a message's data.
inline auto text_sink(sink_config cfg) {
  return sink<std::string>(std::move(cfg), [](const std::string& s) { return std::string_view{s}; });
}

}  // namespace troupe::nats
