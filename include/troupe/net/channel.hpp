// channel.hpp: typed streams between processes (the troupe::net module).
// A remote channel carries the elements of a stream from nodes in one
// process to nodes in another, with the same guarantees as a channel inside
// a graph: bounded memory on both sides, no loss, order per sender, and the
// end of the stream drains it.
//   net::cluster cl{sys, node, {.rank = 0, .peers = {{"tcp://127.0.0.1:7000", k0}, {"tcp://127.0.0.1:7001", k1}}}};
//   // process 0: a graph that ends in a channel to rank 1
//   spawn_pattern(sys, pipeline{source, farm{parse{}, 2}, net::channel_out<rec>(cl, "recs", {1})});
//   // process 1: a graph that starts from it (two senders: parse's replicas)
//   spawn_pattern(sys, pipeline{net::channel_in<rec>(cl, "recs", 2), farm{score{}, 2}, sink});
// Elements travel in batches (`batch` elements, or what has come within
// `max_delay`, or what there is when the sender's input runs dry), each one
// message to the receiving inlet. Flow control is by credit, per sender and
// receiver: a receiver grants `window` elements, and grants again what its
// node has consumed (a quarter window at a time, all of it when it runs dry,
// and at once to a sender that has ended); a sender with no credit left
// waits (its upstream is held back as by a full channel), so a slow consumer
// holds back its producers and neither side buffers more than window
// elements per pair.
// send_all (punctuations) reaches every receiving inlet, in order with the
// elements around it. A channel_out routes with a farm policy over several
// inlets (round robin, by key, broadcast, least loaded: the one with the
// fewest unacknowledged elements).
// End of stream: a sender's last batch is followed by an end marker with the
// count it sent; the receiver checks the count, ends after every sender has
// ended, and the sender waits until everything it sent is acknowledged.
// Failure: a lost peer (troupe::net's heartbeat) or a peer whose part of the
// graph failed ends the channel on both sides with an error that names the
// peer and counts the acknowledged elements; the error propagates along the
// channels, so every process of a split graph ends (net::split, below).
// Element types cross as message values do (codec.hpp): name user types with
// net::add_type<T>("name") on every process first.
// Threads: channel nodes wait (for credit, for input), so each runs on a
// thread of its own (needs_own_thread).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "troupe/net/node.hpp"
#include "troupe/stream.hpp"

namespace troupe::net {

/// Where the processes of a split graph run: one address per rank.
struct cluster_config {
  std::size_t rank = 0;
  /// peers[r]: where rank r listens (peers[rank]: this process; bound by the
  /// cluster) and its public key (empty for plaintext).
  std::vector<remote_address> peers;
  /// How long finding a peer's inlet, and waiting for a sender's first
  /// message, may take (peers may start in any order).
  std::chrono::milliseconds connect_timeout{20000};
};

/// Sizes of a remote channel (the same on every process of a graph).
struct channel_config {
  std::size_t batch = 1024;                   ///< elements per message
  std::chrono::microseconds max_delay{1000};  ///< a partial batch waits at most this long
  /// Credit per sender and receiver, in elements (>= batch). It must cover
  /// what flows during a grant's round trip; on a loaded machine that trip
  /// includes scheduling delays of milliseconds (remote_pipeline, 2 cores:
  /// 32768 reached 0.78x of raw ZeroMQ, 65536 0.92-0.95x, 131072 1.0x).
  std::size_t window = 65536;
};

/// The processes of a split graph, as this process sees them: a node listening
/// at its own address and a directory of the inlets of its channels.
class cluster {
 public:
  /// Listens at cfg.peers[cfg.rank] (net_error: a bad rank or endpoint).
  cluster(actor_system& sys, node& n, cluster_config cfg);
  ~cluster();
  cluster(const cluster&) = delete;
  cluster& operator=(const cluster&) = delete;

  std::size_t rank() const noexcept { return cfg_.rank; }
  std::size_t size() const noexcept { return cfg_.peers.size(); }
  actor_system& system() const noexcept { return *sys_; }
  const cluster_config& config() const noexcept { return cfg_; }
  /// "rank 1 (tcp://127.0.0.1:7001)"
  std::string describe(std::size_t rank) const;
  /// Where this process listens (the endpoint bound: a port "*" resolved).
  const remote_address& self_address() const noexcept { return cfg_.peers[cfg_.rank]; }
  /// Sets where rank `r` listens, when it was not known at construction
  /// (a peer that bound port "*"); before any channel looks for it.
  void set_peer(std::size_t r, remote_address where);

  /// Makes an inlet findable by the processes of the cluster.
  void publish(const actor& inlet, const std::string& name);
  /// The inlet `name` of rank `rank`: this process's own, or a remote one,
  /// retried until connect_timeout (net_error then, naming both).
  actor find(std::size_t rank, const std::string& name);

 private:
  struct directory;
  actor_system* sys_;
  node* node_;
  cluster_config cfg_;
  std::unique_ptr<directory> dir_;
};

/// A channel failed: a peer was lost, or its part of the graph failed.
class channel_error : public net_error {
 public:
  using net_error::net_error;
};

namespace detail {

struct chan_open_atom {};
struct chan_data_atom {};
struct chan_end_atom {};
struct chan_credit_atom {};

/// The messages every channel uses (idempotent).
void register_channel_messages();

/// Batch buffers of element type T that the channels of this process reuse:
/// a sender takes one for the copy it sends, the node's decoding takes one
/// for a batch that comes in, and a batch gives its buffer back when it is
/// destroyed (wherever that is). Without the pool every batch was a malloc
/// in one thread and a free in another, and glibc kept returning the freed
/// memory to the kernel (madvise, with TLB shootdowns) and faulting it in
/// again; measured on remote_pipeline (see docs/performance.md).
template <class T>
class batch_pool {
 public:
  static batch_pool& get() {
    static auto* pool = new batch_pool;  // never destroyed: a batch may die during static destruction
    return *pool;
  }
  /// An empty buffer, with the capacity it had (or none).
  std::vector<T> take() {
    std::lock_guard<std::mutex> g{mtx_};
    if (free_.empty()) return {};
    std::vector<T> v = std::move(free_.back());
    free_.pop_back();
    return v;
  }
  /// Keeps v's buffer (up to `keep` of them); v is left without one.
  void give(std::vector<T>& v) noexcept {
    if (v.capacity() == 0) return;
    v.clear();
    std::lock_guard<std::mutex> g{mtx_};
    if (free_.size() >= keep) return;
    try {
      free_.push_back(std::move(v));
    } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory: v frees its buffer itself
    }
  }

 private:
  batch_pool() = default;
  static constexpr std::size_t keep = 64;
  std::mutex mtx_;
  std::vector<std::vector<T>> free_;
};

/// The elements of one channel message, in a buffer from batch_pool<T>.
/// On the wire it is a vector<T>.
template <class T>
struct batch {
  std::vector<T> items;

  batch() : items{batch_pool<T>::get().take()} {}
  batch(const batch& o) : batch{} { items = o.items; }
  batch(batch&& o) noexcept : items{std::move(o.items)} {}
  batch& operator=(const batch& o) {
    items = o.items;
    return *this;
  }
  batch& operator=(batch&& o) noexcept {
    items.swap(o.items);  // o gives our old buffer back
    return *this;
  }
  ~batch() { batch_pool<T>::get().give(items); }
};

template <class T>
void register_channel_type() {
  static const bool once = [] {
    register_channel_messages();
    add_message<chan_data_atom, std::uint64_t, batch<T>>();
    return true;
  }();
  (void)once;
}

class owned_cell;

/// An actor that no worker runs: its owner (one thread) drains its mailbox
/// itself, and a sender that finds the mailbox empty wakes the owner. The
/// ends of a channel are such actors, so that batches and credit go from the
/// node's I/O thread (or a local sender) straight to the thread that uses
/// them, with no pool worker in between.
class owned_mailbox {
 public:
  explicit owned_mailbox(actor_system& sys);
  /// Ends the actor if it has not ended (with `error{}`: normally).
  ~owned_mailbox();
  owned_mailbox(const owned_mailbox&) = delete;
  owned_mailbox& operator=(const owned_mailbox&) = delete;

  const actor& handle() const noexcept { return handle_; }
  /// Owner: calls f(message_node&) for every queued message.
  template <class F>
  void drain(F&& f) {
    if (ended_) return;
    for (;;) {
      std::size_t taken = 0;
      while (auto* n = take()) {
        std::unique_ptr<troupe::detail::message_node, troupe::detail::message_deleter> guard{n};
        ++taken;
        f(*n);
      }
      if (taken == 0 || settle(taken) == 0) return;
    }
  }
  /// Owner: waits until mail comes or `until`.
  void wait(std::chrono::steady_clock::time_point until);
  /// Owner: ends the actor (its monitors learn `why`); later mail is dead.
  void end(const error& why);
  bool ended() const noexcept { return ended_; }
  /// The wake-up the cell and its owner share: the cell keeps it alive as
  /// long as a sender may still be waking it, whatever the owner does.
  struct signal {
    std::mutex mtx;
    std::condition_variable cv;
    std::atomic<bool> mail{false}, waiting{false};
    void notify() noexcept;
  };

 private:
  troupe::detail::message_node* take() noexcept;
  std::size_t settle(std::size_t n) noexcept;

  std::shared_ptr<signal> signal_;
  owned_cell* cell_;
  actor handle_;
  bool ended_ = false;
};

/// A receiving inlet, the type-free part: an actor whose mailbox its reader
/// (the one node that takes the inlet's elements) drains itself, on its own
/// thread: batches, opens and end markers of the senders, down messages of
/// their credit actors, exits. No worker runs it, so a batch goes from the
/// node's I/O thread (or a local sender) straight to the reader. Every
/// member is the reader's, but the wake-up flag.
class inlet_core {
 public:
  inlet_core(actor_system& sys, std::string name, std::size_t senders, channel_config cfg,
             std::chrono::milliseconds open_timeout);
  virtual ~inlet_core();
  inlet_core(const inlet_core&) = delete;
  inlet_core& operator=(const inlet_core&) = delete;

  /// The inlet's actor handle (to publish).
  const actor& handle() const noexcept { return box_.handle(); }
  const std::string& name() const noexcept { return name_; }
  /// Counts `n` elements of `sender` as consumed. They are granted back a
  /// quarter window at a time, all of them when the inlet runs dry, and each
  /// at once after the sender has ended.
  void consumed(std::uint64_t sender, std::size_t n);
  /// Ends the inlet normally, after the end of the stream, once every sender
  /// has ended its side (it has all its acknowledgements, so this process
  /// may exit), or after `linger` at most.
  void close(std::chrono::milliseconds linger = std::chrono::seconds{10});
  /// Ends the inlet with `why`: its senders fail (graph failure).
  void abort(const error& why);
  /// The most elements that had arrived and were not consumed yet, at once.
  std::size_t peak_queued() const noexcept { return peak_; }
  /// Every sender has ended and every batch was taken.
  bool ended() const noexcept { return !has_batch() && all_ended(); }

 protected:
  struct sender_rec {
    actor credit_to;
    std::uint32_t dest = 0;
    std::uint64_t received = 0, granted = 0;
    std::uint64_t consumed = 0;  ///< taken by the reader, not granted back yet
    bool ended = false;
    bool gone = false;  ///< its credit actor ended after its end marker: it has every grant
  };
  /// Takes what the mailbox holds, then waits (up to `until`) for a batch,
  /// the end or a failure; throws the failure. true: a batch is queued or
  /// every sender has ended.
  bool wait_ready(std::chrono::steady_clock::time_point until);
  /// A batch of the typed part's element type: queues it (false: another
  /// message type).
  virtual bool take_data(troupe::detail::message_node& n) = 0;
  virtual bool has_batch() const noexcept = 0;
  /// Counts a batch of `n` from `id`; false (and a failure) when it may not be.
  bool on_data(std::uint64_t id, std::size_t n);
  void fail(const std::string& why);
  /// Grants the sender what its reader consumed since the last grant.
  void grant(sender_rec& rec);
  void grant_all();

  actor_system& sys_;
  std::string name_;
  std::size_t expected_;
  channel_config cfg_;

 private:
  /// Handles every message in the mailbox.
  void drain();
  void handle(troupe::detail::message_node& n);
  void on_open(std::uint64_t id, std::uint32_t dest, const actor& credit_to);
  void on_end(std::uint64_t id, std::uint64_t total);
  void on_down(const down_msg& d);
  bool all_ended() const noexcept { return ended_ == expected_ && opened_ == expected_; }
  bool all_gone() const noexcept;
  sender_rec* find_sender(std::uint64_t id);

  std::chrono::steady_clock::time_point open_deadline_;
  std::vector<std::pair<std::uint64_t, sender_rec>> senders_;
  std::size_t opened_ = 0, ended_ = 0;
  std::size_t queued_ = 0, peak_ = 0;
  std::string failure_;
  owned_mailbox box_;
};

/// The receiving end of type T.
template <class T>
class inlet final : public inlet_core {
 public:
  inlet(actor_system& sys, std::string name, std::size_t senders, channel_config cfg,
        std::chrono::milliseconds open_timeout)
      : inlet_core{sys, std::move(name), senders, cfg, open_timeout} {
    register_channel_type<T>();
  }
  static std::shared_ptr<inlet> make(actor_system& sys, std::string name, std::size_t senders, channel_config cfg,
                                     std::chrono::milliseconds open_timeout) {
    return std::make_shared<inlet>(sys, std::move(name), senders, cfg, open_timeout);
  }

  /// The next batch (from sender .first): waits up to `until`. nullopt:
  /// none yet (check ended()). Throws channel_error when the channel failed.
  std::optional<std::pair<std::uint64_t, batch<T>>> next(std::chrono::steady_clock::time_point until) {
    if (!wait_ready(until) || batches_.empty()) return std::nullopt;
    auto b = std::move(batches_.front());
    batches_.pop_front();
    return b;
  }

 private:
  bool take_data(troupe::detail::message_node& n) override {
    if (!n.holds<chan_data_atom, std::uint64_t, batch<T>>()) return false;
    auto& [atom, id, b] = troupe::detail::values_of<chan_data_atom, std::uint64_t, batch<T>>(n);
    if (on_data(id, b.items.size())) batches_.emplace_back(id, std::move(b));
    return true;
  }
  bool has_batch() const noexcept override { return !batches_.empty(); }

  std::deque<std::pair<std::uint64_t, batch<T>>> batches_;
};

/// What a sender shares with its credit actor (the type-free part): the
/// destinations, their credit and acknowledgements, the failure.
class outlet_core {
 public:
  outlet_core(cluster& cl, std::string name, channel_config cfg);
  ~outlet_core();
  outlet_core(const outlet_core&) = delete;
  outlet_core& operator=(const outlet_core&) = delete;

  /// Finds every destination (dest i: inlet `names[i]` at rank `ranks[i]`),
  /// opens it as sender `id`, and watches it.
  void open(std::uint64_t id, const std::vector<std::size_t>& ranks, const std::vector<std::string>& names);
  std::size_t size() const noexcept { return dests_.size(); }
  /// Elements sent to dest i and not yet acknowledged, as last heard (least_loaded).
  std::size_t unacknowledged(std::size_t i) const noexcept {
    return static_cast<std::size_t>(dests_[i].sent - dests_[i].acked);
  }
  /// Sends the end marker to every destination and waits until all that
  /// was sent is acknowledged. Throws channel_error.
  void finish_all();
  /// Ends the channel with `why` (the receivers fail, and so do this
  /// sender's waits).
  void abort(const error& why);
  std::uint64_t acknowledged() const;
  /// Waits also end (channel_error) once `*flag` is set.
  void watch(const std::atomic<bool>* flag) noexcept { cancelled_ = flag; }

 protected:
  /// Waits until dest i has credit for `n` elements, then takes it.
  void take_credit(std::size_t i, std::size_t n);
  std::uint64_t id() const noexcept { return id_; }
  const actor& inlet_of(std::size_t i) const noexcept { return dests_[i].inlet; }
  void count_sent(std::size_t i, std::size_t n) noexcept { dests_[i].sent += n; }
  std::uint64_t sent(std::size_t i) const noexcept { return dests_[i].sent; }

  cluster& cl_;
  std::string name_;
  channel_config cfg_;

 private:
  struct dest {
    actor inlet;
    std::string where;  ///< "inlet 'x' at rank 1 (tcp://...)"
    std::uint64_t sent = 0;
    std::int64_t credit = 0;
    std::uint64_t acked = 0;
    bool closed = false;  ///< the inlet ended
  };
  /// Takes the grants and downs that came; throws the failure, if any.
  void receive();
  /// Throws if the watched flag is set.
  void check_cancelled() const;
  [[noreturn]] void fail_now() const;
  std::uint64_t id_ = 0;
  const std::atomic<bool>* cancelled_ = nullptr;
  std::vector<dest> dests_;
  std::string failure_;
  /// The sender's credit actor: grants and the inlets' down messages come
  /// here; it ends normally once everything is acknowledged (finish_all).
  std::unique_ptr<owned_mailbox> box_;
};

/// Where a split replica's node emits: a remote channel (outlet), or the
/// next stage's node run in the same thread (split.hpp).
template <class T>
class split_out : public troupe::detail::emit_target<T> {
 public:
  virtual ~split_out() = default;
  /// Opens the way out as sender `id` (finds the inlets, starts the nodes).
  virtual void open(std::uint64_t id) = 0;
  /// The input ran dry: send what waits in partial batches.
  virtual void idle() = 0;
  /// The end of the stream: send the rest, end every receiver, wait for
  /// the last acknowledgement.
  virtual void finish() = 0;
  /// Ends every receiver with `why`.
  virtual void abort(const error& why) = 0;
  /// Elements emitted into it (any thread).
  virtual std::uint64_t emitted() const noexcept = 0;
};

/// The sending end: batches per destination (inlet `names[i]` at rank
/// `ranks[i]`), routed by a farm policy.
template <class T, class Policy>
class outlet final : public outlet_core, public split_out<T> {
 public:
  outlet(cluster& cl, std::string name, channel_config cfg, Policy policy, std::vector<std::size_t> ranks,
         std::vector<std::string> names)
      : outlet_core{cl, std::move(name), cfg},
        policy_{std::move(policy)},
        ranks_{std::move(ranks)},
        names_{std::move(names)} {
    register_channel_type<T>();
  }

  void open(std::uint64_t id) override {
    outlet_core::open(id, ranks_, names_);
    batches_.resize(size());
    for (auto& b : batches_) b.reserve(cfg_.batch);
    oldest_ = 0;
  }
  void idle() override { flush_all(); }
  void abort(const error& why) override { outlet_core::abort(why); }

  void send_routed(T&& v) override {
    if constexpr (troupe::detail::broadcasting<Policy>) {
      send_all(std::move(v));
    } else {
      const std::size_t n = size();
      std::size_t i = 0;
      if (n > 1) {
        if constexpr (troupe::detail::load_aware_route<Policy, T>)
          i = policy_.pick(std::as_const(v), n,
                           [this](std::size_t j) { return unacknowledged(j) + batches_[j].size(); });
        else i = policy_.pick(std::as_const(v), n) % n;
      }
      add(i, std::move(v));
    }
    emitted_.store(emitted_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  bool send_if(T& v, std::size_t /*limit*/) override {
    send_routed(std::move(v));
    return true;
  }
  void send_all(T&& v) override {
    for (std::size_t i = 0; i + 1 < size(); ++i) add(i, T{v});
    if (size() > 0) add(size() - 1, std::move(v));
    if constexpr (!troupe::detail::broadcasting<Policy>)
      emitted_.store(emitted_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  /// Elements the node emitted (any thread).
  std::uint64_t emitted() const noexcept override { return emitted_.load(std::memory_order_relaxed); }
  void watermark(std::uint64_t /*w*/) override {}  // do not cross (documented)

  /// Sends every partial batch (input ran dry, or a stop).
  void flush_all() {
    for (std::size_t i = 0; i < batches_.size(); ++i)
      if (!batches_[i].empty()) flush(i);
    oldest_ = 0;
  }
  /// Flushes, ends every destination, waits for the last acknowledgement.
  void finish() override {
    flush_all();
    finish_all();
  }

 private:
  void add(std::size_t i, T&& v) {
    auto& b = batches_[i];
    b.push_back(std::move(v));
    if (b.size() >= cfg_.batch) {
      flush(i);
    } else if ((++since_check_ & 63) == 0) {
      const auto t = stream::now();
      if (oldest_ == 0) oldest_ = t;
      else if (t - oldest_ >= static_cast<std::uint64_t>(cfg_.max_delay.count()) * 1000) flush_all();
    }
  }
  void flush(std::size_t i) {
    auto& b = batches_[i];
    take_credit(i, b.size());
    count_sent(i, b.size());
    if (batches_.size() == 1) oldest_ = 0;  // nothing waits any more
    // The batch buffer stays with this thread (hot in its cache); the message
    // gets a copy. Handing the buffer itself over costs more: its memory comes
    // back (malloc) with its lines in the reading core's cache, and filling it
    // again then misses on every line (measured: about half the sender's time).
    batch<T> msg;
    msg.items.reserve(cfg_.batch);
    msg.items.insert(msg.items.end(), std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()));
    b.clear();
    cl_.system().send(inlet_of(i), chan_data_atom{}, id(), std::move(msg));
  }

  Policy policy_;
  std::vector<std::size_t> ranks_;
  std::vector<std::string> names_;
  std::vector<std::vector<T>> batches_;
  std::uint64_t oldest_ = 0;  ///< when the time-limit check first saw unsent elements
  std::uint32_t since_check_ = 0;
  std::atomic<std::uint64_t> emitted_{0};
};

/// A sender id unique among the senders of one inlet: rank and replica.
inline std::uint64_t sender_id(std::size_t rank, std::size_t replica) noexcept {
  return (static_cast<std::uint64_t>(rank) << 32) | static_cast<std::uint64_t>(replica);
}

/// The deadline for the next wait of a reading node: short, so that a
/// cancelled graph is seen.
inline std::chrono::steady_clock::time_point soon() {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds{50};
}

}  // namespace detail

/// A sink node that sends its input to the inlets `name/0 .. name/n-1` at
/// ranks[0 .. n-1] (a channel_in, or a replica of a split stage), routed by
/// `policy` as a farm would route it. In a farm, each replica is a sender.
template <class T, class Policy = round_robin>
class channel_out : public stream::node<T, void> {
 public:
  static constexpr const char* kind = "channel_out";
  static constexpr bool needs_own_thread = true;

  channel_out(cluster& cl, std::string name, std::vector<std::size_t> ranks, Policy policy = {},
              channel_config cfg = {})
      : cl_{&cl}, name_{std::move(name)}, ranks_{std::move(ranks)}, policy_{std::move(policy)}, cfg_{cfg} {
    if (ranks_.empty()) throw std::invalid_argument("troupe::net::channel_out '" + name_ + "': no destination");
    for (auto r : ranks_)
      if (r >= cl.size())
        throw std::invalid_argument("troupe::net::channel_out '" + name_ + "': rank " + std::to_string(r) +
                                    " is not in the cluster (" + std::to_string(cl.size()) + " ranks)");
    if (cfg_.batch == 0 || cfg_.window < cfg_.batch)
      throw std::invalid_argument("troupe::net::channel_out '" + name_ + "': needs 0 < batch <= window");
  }
  channel_out(const channel_out& o)
      : stream::node<T, void>{o}, cl_{o.cl_}, name_{o.name_}, ranks_{o.ranks_}, policy_{o.policy_}, cfg_{o.cfg_} {}
  channel_out(channel_out&&) noexcept = default;

  void on_start() {
    std::vector<std::string> names(ranks_.size());
    for (std::size_t i = 0; i < names.size(); ++i) names[i] = name_ + "/" + std::to_string(i);
    out_ = std::make_unique<detail::outlet<T, Policy>>(*cl_, name_, cfg_, policy_, ranks_, names);
    out_->open(detail::sender_id(cl_->rank(), this->replica_index()));
  }
  void consume(T& x) { out_->send_routed(std::move(x)); }
  void on_idle() { out_->flush_all(); }
  void on_stop() { out_->finish(); }
  /// Elements acknowledged by the receivers (after the graph ends).
  std::uint64_t acknowledged() const { return out_ ? out_->acknowledged() : 0; }

 private:
  cluster* cl_;
  std::string name_;
  std::vector<std::size_t> ranks_;
  Policy policy_;
  channel_config cfg_;
  std::unique_ptr<detail::outlet<T, Policy>> out_;
};

/// A source node that emits what the `senders` channel_outs send to
/// `name/<replica>` (publishes that inlet on start); ends when every sender
/// has ended. A farm of channel_in replicas is a farm of inlets.
template <class T>
class channel_in : public stream::node<void, T> {
 public:
  static constexpr const char* kind = "channel_in";
  static constexpr bool needs_own_thread = true;

  channel_in(cluster& cl, std::string name, std::size_t senders, channel_config cfg = {})
      : cl_{&cl}, name_{std::move(name)}, senders_{senders}, cfg_{cfg} {
    if (senders == 0) throw std::invalid_argument("troupe::net::channel_in '" + name_ + "': no sender");
  }
  channel_in(const channel_in& o)
      : stream::node<void, T>{o}, cl_{o.cl_}, name_{o.name_}, senders_{o.senders_}, cfg_{o.cfg_} {}
  channel_in(channel_in&&) noexcept = default;

  void on_start() {
    const std::string full = name_ + "/" + std::to_string(this->replica_index());
    in_ = detail::inlet<T>::make(cl_->system(), full, senders_, cfg_, cl_->config().connect_timeout);
    cl_->publish(in_->handle(), full);
  }
  bool produce() {
    try {
      if (auto b = in_->next(detail::soon())) {
        for (auto& x : b->second.items) this->send_next(std::move(x));
        in_->consumed(b->first, b->second.items.size());
        return true;
      }
      return !in_->ended();
    } catch (const std::exception& e) {
      in_->abort(error{errc::runtime_error, e.what()});
      throw;
    }
  }
  void on_stop() {
    if (in_) in_->close();
  }
  /// The most elements queued at this inlet at once (for tests).
  std::size_t peak_queued() const { return in_ ? in_->peak_queued() : 0; }

 private:
  cluster* cl_;
  std::string name_;
  std::size_t senders_;
  channel_config cfg_;
  std::shared_ptr<detail::inlet<T>> in_;
};

/// A channel batch travels as the vector of its elements.
template <class T>
struct codec<detail::batch<T>> {
  static std::string name() { return codec<std::vector<T>>::name(); }
  static void write(writer& w, const detail::batch<T>& b) { codec<std::vector<T>>::write(w, b.items); }
  static void read(reader& r, detail::batch<T>& b) { codec<std::vector<T>>::read(r, b.items); }
};

}  // namespace troupe::net
