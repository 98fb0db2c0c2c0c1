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
// node has consumed; a sender with no credit left waits (its upstream is
// held back as by a full channel), so a slow consumer holds back its
// producers and neither side buffers more than window elements per pair.
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
  std::size_t window = 8192;                  ///< credit per sender and receiver, in elements (>= batch)
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
/// Ends an inlet or a credit actor normally (local only: never crosses).
struct chan_close_atom {};

/// The messages every channel uses (idempotent).
void register_channel_messages();

template <class T>
void register_channel_type() {
  static const bool once = [] {
    register_channel_messages();
    add_message<chan_data_atom, std::uint64_t, std::vector<T>>();
    return true;
  }();
  (void)once;
}

/// What a receiving inlet shares with the node that reads it (the type-free
/// part): senders, credit, failure.
class inlet_core {
 public:
  inlet_core(actor_system& sys, std::string name, std::size_t senders, channel_config cfg,
             std::chrono::milliseconds open_timeout);
  virtual ~inlet_core();

  /// The inlet actor (spawned by the typed inlet; published by the caller).
  const actor& handle() const noexcept { return actor_; }
  const std::string& name() const noexcept { return name_; }
  /// Grants `n` consumed elements back to `sender`.
  void consumed(std::uint64_t sender, std::size_t n);
  /// Ends the inlet's actor normally, after the end of the stream, once
  /// every sender has ended its side (it has all its acknowledgements, so
  /// this process may exit), or after `linger` at most.
  void close(std::chrono::milliseconds linger = std::chrono::seconds{10});
  /// Ends the inlet's actor with `why`: its senders fail (graph failure).
  void abort(const error& why);
  /// The largest number of elements queued at once (for tests and stats).
  std::size_t peak_queued() const;

 protected:
  struct sender_rec {
    actor credit_to;
    std::uint32_t dest = 0;
    std::uint64_t received = 0, granted = 0;
    bool ended = false;
    bool gone = false;  ///< its credit actor ended after its end marker: it has every grant
  };
  // Under mtx_: queue state kept by the typed part.
  void on_open(event_actor& self, std::uint64_t id, std::uint32_t dest, const actor& credit_to);
  /// false: a batch from a sender that did not open, or that ended.
  bool on_data(std::uint64_t id, std::size_t n);
  void on_end(std::uint64_t id, std::uint64_t total);
  void on_down(const down_msg& d);
  void on_exit(const exit_msg& e);
  /// The inlet actor's down and exit handlers.
  static void install_hooks(event_actor& self, const std::weak_ptr<inlet_core>& weak);
  /// Waits (up to `until`) for a batch, the end or a failure; throws the failure.
  /// true: a batch is queued or every sender has ended.
  bool wait_ready(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point until);
  bool all_ended() const noexcept { return ended_ == expected_ && opened_ == expected_; }
  virtual bool has_batch() const noexcept = 0;
  void fail(const std::string& why);

  actor_system& sys_;
  std::string name_;
  std::size_t expected_;
  channel_config cfg_;
  std::chrono::steady_clock::time_point open_deadline_;
  mutable std::mutex mtx_;
  std::condition_variable cv_;
  std::vector<std::pair<std::uint64_t, sender_rec>> senders_;
  std::size_t opened_ = 0, ended_ = 0;
  std::size_t queued_ = 0, peak_ = 0;
  std::string failure_;
  actor actor_;

 private:
  sender_rec* find_sender(std::uint64_t id);
};

/// The receiving end: an actor that queues the batches of its senders, and
/// the reader (one node) that takes them.
template <class T>
class inlet final : public inlet_core {
 public:
  inlet(actor_system& sys, std::string name, std::size_t senders, channel_config cfg,
        std::chrono::milliseconds open_timeout)
      : inlet_core{sys, std::move(name), senders, cfg, open_timeout} {
    register_channel_type<T>();
  }
  /// Spawns the inlet actor (after construction: it holds a weak pointer).
  static std::shared_ptr<inlet> make(actor_system& sys, std::string name, std::size_t senders, channel_config cfg,
                                     std::chrono::milliseconds open_timeout) {
    auto in = std::make_shared<inlet>(sys, std::move(name), senders, cfg, open_timeout);
    std::weak_ptr<inlet> weak = in;
    in->actor_ = sys.spawn([weak](event_actor& self) {
      install_hooks(self, weak);
      return behavior{
          [weak, &self](chan_open_atom, std::uint64_t id, std::uint32_t dest, const actor& credit_to) {
            if (auto s = weak.lock()) s->on_open(self, id, dest, credit_to);
          },
          [weak](chan_data_atom, std::uint64_t id, std::vector<T>& batch) {
            if (auto s = weak.lock()) s->push(id, std::move(batch));
          },
          [weak](chan_end_atom, std::uint64_t id, std::uint64_t total) {
            if (auto s = weak.lock()) s->on_end(id, total);
          },
          [&self](chan_close_atom) { self.quit(); },
      };
    });
    return in;
  }

  /// The next batch: waits up to `until`. nullopt: none yet (check ended()).
  /// Throws channel_error when the channel failed.
  std::optional<std::pair<std::uint64_t, std::vector<T>>> next(std::chrono::steady_clock::time_point until) {
    std::unique_lock<std::mutex> lock{mtx_};
    if (!wait_ready(lock, until) || batches_.empty()) return std::nullopt;
    auto b = std::move(batches_.front());
    batches_.pop_front();
    return b;
  }
  /// Every sender has ended and every batch was taken.
  bool ended() const {
    std::lock_guard<std::mutex> lock{mtx_};
    return batches_.empty() && all_ended();
  }

 private:
  void push(std::uint64_t id, std::vector<T>&& batch) {
    {
      std::lock_guard<std::mutex> lock{mtx_};
      if (!on_data(id, batch.size())) return;
      batches_.emplace_back(id, std::move(batch));
    }
    cv_.notify_one();
  }
  bool has_batch() const noexcept override { return !batches_.empty(); }

  std::deque<std::pair<std::uint64_t, std::vector<T>>> batches_;
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
  /// Elements sent to dest i and not yet acknowledged (least_loaded).
  std::size_t unacknowledged(std::size_t i) const;
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
  /// Throws the failure, if any (under no lock).
  void check() const;
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
    std::string where;        ///< "inlet 'x' at rank 1 (tcp://...)"
    std::uint64_t sent = 0;   ///< by the sending thread only
    std::int64_t credit = 0;  ///< under mtx_
    std::uint64_t acked = 0;  ///< under mtx_
    bool granted = false;     ///< under mtx_: the first grant came
  };
  struct shared;
  /// Throws if the watched flag is set (under no lock of ours).
  void check_cancelled() const;
  std::uint64_t id_ = 0;
  bool finished_ = false;  ///< finish_all completed: the credit actor ended normally
  const std::atomic<bool>* cancelled_ = nullptr;
  std::vector<dest> dests_;
  std::shared_ptr<shared> sh_;
  actor credit_actor_;
};

/// The sending end: batches per destination, routed by a farm policy.
template <class T, class Policy>
class outlet final : public outlet_core, public troupe::detail::emit_target<T> {
 public:
  outlet(cluster& cl, std::string name, channel_config cfg, Policy policy)
      : outlet_core{cl, std::move(name), cfg}, policy_{std::move(policy)} {
    register_channel_type<T>();
  }

  void open(std::uint64_t id, const std::vector<std::size_t>& ranks, const std::vector<std::string>& names) {
    outlet_core::open(id, ranks, names);
    batches_.resize(size());
    for (auto& b : batches_) b.reserve(cfg_.batch);
    oldest_ = 0;
  }

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
  std::uint64_t emitted() const noexcept { return emitted_.load(std::memory_order_relaxed); }
  void watermark(std::uint64_t /*w*/) override {}  // do not cross (documented)

  /// Sends every partial batch (input ran dry, or a stop).
  void flush_all() {
    for (std::size_t i = 0; i < batches_.size(); ++i)
      if (!batches_[i].empty()) flush(i);
    oldest_ = 0;
  }
  /// Flushes, ends every destination, waits for the last acknowledgement.
  void finish() {
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
    std::vector<T> fresh;
    fresh.reserve(cfg_.batch);
    cl_.system().send(inlet_of(i), chan_data_atom{}, id(), std::exchange(b, std::move(fresh)));
  }

  Policy policy_;
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

  void on_start() {
    out_ = std::make_unique<detail::outlet<T, Policy>>(*cl_, name_, cfg_, policy_);
    std::vector<std::string> names;
    for (std::size_t i = 0; i < ranks_.size(); ++i) names.push_back(name_ + "/" + std::to_string(i));
    out_->open(detail::sender_id(cl_->rank(), this->replica_index()), ranks_, names);
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

  void on_start() {
    const std::string full = name_ + "/" + std::to_string(this->replica_index());
    in_ = detail::inlet<T>::make(cl_->system(), full, senders_, cfg_, cl_->config().connect_timeout);
    cl_->publish(in_->handle(), full);
  }
  bool produce() {
    try {
      if (auto b = in_->next(detail::soon())) {
        for (auto& x : b->second) this->send_next(std::move(x));
        in_->consumed(b->first, b->second.size());
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

}  // namespace troupe::net
