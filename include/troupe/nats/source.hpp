// source.hpp: a stream source reading a NATS JetStream stream through a
// durable pull consumer (the optional troupe::nats module).
//   namespace nats = troupe::nats;
//   auto in = nats::source<txn>({.stream = "CARDS", .durable = "fraud"},
//                               [](const nats::message& m) { return parse_txn(m.data); });
//   auto lines = nats::text_source({.stream = "LINES", .durable = "wc", .bounded = true});
// A decoder is T(const message&), or void(const message&, stream::emitter<T>&)
// for zero or several elements per message; what it throws fails the graph
// (or is skipped, under failure::skip) with the message's sequence named.
//
// Exactly once with checkpoints: the source's position is the stream
// sequence of the last message it emitted; a checkpoint saves it, and when
// the checkpoint completes the source acknowledges up to it (the consumer's
// ack policy is "all"). Started from a checkpoint, it makes the consumer
// deliver from the message after the saved position, whatever the server had
// acknowledged; started afresh, from the message after the consumer's ack
// floor (so a job run again goes on where the last one left). The consumer is
// the source's own: it is made, and made again at each start, with the
// source's settings. At the end of the stream it acknowledges everything
// read with the graph's last checkpoint (waiting for the server's answer).
// Without checkpoints it acknowledges each batch once it has emitted it, as
// Kafka's auto-commit does: a crash loses what was in flight in the graph
// then (at most once for those).
//
// Threads: a thread of its own fetches batches (up to `batch` messages, a
// few batches ahead) and wakes the node, which never blocks its worker. One
// replica per consumer: messages are in stream order, and a farm after the
// source spreads them.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/nats/client.hpp"
#include "troupe/stream/node.hpp"
#include "troupe/stream/state.hpp"

namespace troupe::nats {

struct source_config {
  connection_config connection{};
  std::string stream;     ///< the JetStream stream (it must exist)
  std::string durable;    ///< the durable pull consumer this source owns ("." not allowed)
  std::string subject{};  ///< a filter subject ("" : every subject of the stream)
  int batch = 512;        ///< messages per fetch (1 to 1,000,000)
  int batches_ahead = 4;  ///< fetched batches waiting for the node at most (>= 1)
  /// End once the messages that matched when the source started have been
  /// read (a bounded job); false: read on until the graph is cancelled.
  bool bounded = false;
  std::chrono::milliseconds poll{100};  ///< how long one fetch waits for messages
  /// Optional: true ends the stream (as the end of a bounded one does),
  /// asked between batches and at least every `poll` while none comes.
  std::function<bool()> stop{};
};

namespace detail {

/// One fetched batch: the messages, parsed, and their reply subjects (for
/// acknowledgements), valid while the batch lives.
struct fetched {
  std::vector<message> messages;
  std::vector<std::string_view> replies;
  std::shared_ptr<void> owner;  // the libnats messages
};

/// The libnats side of a source: the connection, the consumer and the
/// fetching thread.
class pull_reader {
 public:
  /// Connects, makes the durable consumer deliver from the message after
  /// `after` (a restored position) or after its ack floor (nullopt), and
  /// starts fetching; `wake` runs on the fetching thread when a batch or a
  /// failure is there. Throws nats_error naming what failed.
  pull_reader(const source_config& cfg, std::optional<std::uint64_t> after, std::function<void()> wake);
  ~pull_reader();
  pull_reader(const pull_reader&) = delete;
  pull_reader& operator=(const pull_reader&) = delete;

  /// The stream sequence delivery starts after.
  std::uint64_t start_after() const noexcept;
  /// How many messages matched after it when the consumer was made.
  std::uint64_t pending_at_start() const noexcept;
  /// The next batch, if one is there (never blocks). Throws nats_error once
  /// fetching has failed for good.
  bool take(fetched& out);
  /// Acknowledges every message up to the one with this reply subject.
  void ack(const std::string& reply);
  /// The same, waiting for the server's answer (nats_error without one).
  void ack_sync(const std::string& reply);
  /// Stops fetching (the stream has ended); acks still go out.
  void halt();
  bool halted() const noexcept;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

[[noreturn]] void throw_decode_error(const source_config& cfg, const message& m, const char* what);
/// Makes the consumer afresh from after `position`, so that a fresh start
/// goes on after it (a source resumed as ended acknowledges so).
void settle(const source_config& cfg, std::uint64_t position);
void check(const source_config& cfg);
/// Throws nats_error unless the source runs as one replica.
void check_replicas(const source_config& cfg, std::size_t replicas);

}  // namespace detail

template <class T, class Decode>
class source_node final : public stream::node<void, T> {
 public:
  static constexpr const char* kind = "nats_source";
  static constexpr bool waits = true;

  source_node(source_config cfg, Decode decode) : cfg_{std::move(cfg)}, decode_{std::move(decode)} {
    detail::check(cfg_);
  }
  /// A copy before start (each replica starts its own reader).
  source_node(const source_node& o) : stream::node<void, T>{o}, cfg_{o.cfg_}, decode_{o.decode_} {}
  source_node(source_node&&) noexcept = default;
  source_node& operator=(const source_node&) = delete;
  source_node& operator=(source_node&&) = delete;
  ~source_node() = default;

  void on_start() {
    detail::check_replicas(cfg_, this->replica_count());
    started_ = true;
    reader_ = std::make_unique<detail::pull_reader>(cfg_, restored_, [w = this->waker()] { w.wake(); });
    last_ = reader_->start_after();
    left_ = reader_->pending_at_start();
  }

  bool produce() {
    for (;;) {
      while (next_ < batch_.messages.size()) {
        const message& m = batch_.messages[next_++];
        if (m.sequence <= last_) continue;  // delivered again: emitted already
        last_ = m.sequence;
        emitted_at_ = next_ - 1;
        if (left_ != 0) --left_;
        emit(m);
        return true;
      }
      if ((cfg_.bounded && left_ == 0) || (cfg_.stop && cfg_.stop())) return false;
      if (keep_last_reply() && !this->checkpointing()) reader_->ack(prev_reply_);  // no checkpoint to wait for
      next_ = 0;
      if (!reader_->take(batch_)) {
        batch_ = {};
        this->hold();
        return true;
      }
    }
  }

  void on_stop() {
    if (!reader_) return;
    if (this->hears_final_checkpoint()) {
      // Acknowledged with the graph's last checkpoint, once it is stored: a
      // kill before then resumes from the checkpoint before.
      reader_->halt();
      keep_last_reply();
      batch_ = {};
      return;
    }
    // The stream ended (bounded or stopped): everything read is acknowledged.
    keep_last_reply();
    batch_ = {};  // the messages go before their connection
    if (!prev_reply_.empty()) reader_->ack_sync(prev_reply_);
    reader_.reset();
  }

  void snapshot(stream::state_writer& out) {
    out.write(last_);
    if (out.checkpoint() != 0 && last_ != 0) acks_.emplace_back(out.checkpoint(), last_reply());
  }
  void restore(stream::state_reader& in) {
    std::uint64_t p = 0;
    in.read(p);
    restored_ = p;
    last_ = p;  // a source resumed as ended keeps it in its final state
  }
  void on_checkpoint_complete(std::uint64_t id) {
    if (!started_) {  // resumed as ended: the graph's last checkpoint
      if (restored_) detail::settle(cfg_, *restored_);
      return;
    }
    if (reader_ && stopped()) {  // the graph's last checkpoint: all read is done
      if (!prev_reply_.empty()) reader_->ack_sync(prev_reply_);
      reader_.reset();
      return;
    }
    std::string reply;
    while (!acks_.empty() && acks_.front().first <= id) {
      reply = std::move(acks_.front().second);
      acks_.pop_front();
    }
    if (!reply.empty() && reader_) reader_->ack(reply);
  }

 private:
  void emit(const message& m) {
    try {
      if constexpr (std::is_invocable_v<Decode&, const message&, stream::emitter<T>&>) {
        decode_(m, static_cast<stream::emitter<T>&>(*this));
      } else {
        static_assert(std::is_invocable_r_v<T, Decode&, const message&>,
                      "troupe::nats::source: the decoder is T(const message&) or "
                      "void(const message&, stream::emitter<T>&)");
        this->send_next(decode_(m));
      }
    } catch (const nats_error&) {
      throw;
    } catch (const std::exception& e) {
      detail::throw_decode_error(cfg_, m, e.what());
    }
  }
  /// The reply subject of the last message emitted (acknowledging it
  /// acknowledges every one before it).
  std::string last_reply() const {
    if (emitted_at_ != none) return std::string{batch_.replies[emitted_at_]};
    return prev_reply_;
  }
  /// Keeps the reply of the last message emitted from batch_ in
  /// prev_reply_, before batch_ goes; whether there was one.
  bool keep_last_reply() {
    if (emitted_at_ == none) return false;
    prev_reply_ = std::string{batch_.replies[emitted_at_]};
    emitted_at_ = none;
    return true;
  }
  static constexpr std::size_t none = static_cast<std::size_t>(-1);
  bool stopped() const noexcept { return reader_ && reader_->halted(); }

  source_config cfg_;
  Decode decode_;
  std::unique_ptr<detail::pull_reader> reader_;
  detail::fetched batch_;
  std::size_t next_ = 0;           // the next message of batch_
  std::size_t emitted_at_ = none;  // the last one emitted from batch_
  std::uint64_t last_ = 0;         // stream sequence of the last message emitted (the position)
  std::uint64_t left_ = 0;         // bounded: messages still to read
  std::optional<std::uint64_t> restored_;
  bool started_ = false;
  std::string prev_reply_;                                  // of the last message emitted before batch_
  std::deque<std::pair<std::uint64_t, std::string>> acks_;  // per checkpoint: the reply to acknowledge
};

/// A source of T decoded from each message by `decode`.
template <class T, class Decode>
source_node<T, Decode> source(source_config cfg, Decode decode) {
  return source_node<T, Decode>{std::move(cfg), std::move(decode)};
}

/// A source of each message's data as a string.
inline auto text_source(source_config cfg) {
  return source<std::string>(std::move(cfg), [](const message& m) { return std::string{m.data}; });
}

}  // namespace troupe::nats
