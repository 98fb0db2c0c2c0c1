// layer: stream
// edge.hpp: a graph split across processes, on the one engine. Every
// process builds the same description; the builder gives each runner slot (a
// node replica, an ordered farm's reorder stage) a rank, makes the runners of
// its own rank as in a one-process graph, and for each slot of another rank
// a stub: no runner, but edges where the slot meets local runners.
//   - edge_sender (a remote port): the local producers that feed a replica
//     of another rank write into it through ordinary SPSC channels, one lane
//     each; it sends their elements in batches, with credit, to that
//     replica's inlet (ext/edges.hpp has the protocol).
//   - edge_receiver: the inlet of a local replica fed from other ranks; it
//     pushes each lane's batches into a channel of its own into the replica.
// Both are runners: they park as an empty or full channel parks a runner
// (mail to their actor wakes them, through runner_waker), and need no thread
// of their own. So the consumer of a lane sees one channel per producer, as
// in one process: routing, send_all, ordered farms, watermarks, end of
// stream, cancellation and metrics work the same across processes.
// Which rank runs what: troupe::placed{p, placement::ranks("0,1")} (replica
// i of a farm inside on the i-th rank of the list, cycling); slots outside
// any such placement run on rank 0.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

#include "troupe/actor/actor_system.hpp"
#include "troupe/actor/system_messages.hpp"
#include "troupe/detail/builder.hpp"
#include "troupe/detail/graph_state.hpp"
#include "troupe/detail/outlet.hpp"
#include "troupe/detail/waker.hpp"
#include "troupe/ext/edges.hpp"
#include "troupe/ext/owned_cell.hpp"
#include "troupe/stream/graph.hpp"

namespace troupe::detail {

/// The actor of an edge runner: its mail wakes the runner.
class edge_cell final : public ext::owned_cell {
 public:
  edge_cell(actor_system& sys, std::shared_ptr<runner_waker> w) : owned_cell{sys}, waker_{std::move(w)} {}

 private:
  void notify() noexcept override { waker_->notify(); }
  std::shared_ptr<runner_waker> waker_;
};

/// An edge runner's actor: made with the runner, ended by it.
class edge_box {
 public:
  explicit edge_box(actor_system& sys)
      : waker_{std::make_shared<runner_waker>()}, cell_{new edge_cell{sys, waker_}}, handle_{cell_->adopt()} {}
  ~edge_box() { end(error{errc::runtime_error, "a stream graph's edge was destroyed before it ended"}); }
  edge_box(const edge_box&) = delete;
  edge_box& operator=(const edge_box&) = delete;

  const actor& handle() const noexcept { return handle_; }
  runner_waker& waker() noexcept { return *waker_; }
  /// Mail waits (atomics only: safe in a release check).
  bool has_mail() const noexcept { return !cell_->ended() && cell_->mailbox_size() != 0; }
  template <class F>
  void drain(F&& f) {
    cell_->drain(std::forward<F>(f));
  }
  void end(const error& why) noexcept {
    if (cell_->ended()) return;
    waker_->disarm();
    cell_->end(why);  // the handle keeps the cell
  }
  bool ended() const noexcept { return cell_->ended(); }

 private:
  std::shared_ptr<runner_waker> waker_;
  edge_cell* cell_;
  actor handle_;
};

/// "rank 1 (tcp://127.0.0.1:7001)" for a lane id (its rank in the high half).
inline std::uint64_t lane_id(std::size_t rank, std::size_t n) noexcept {
  return (static_cast<std::uint64_t>(rank) << 32) | static_cast<std::uint64_t>(n & 0xffffffffU);
}
inline std::size_t rank_of_lane(std::uint64_t id) noexcept { return static_cast<std::size_t>(id >> 32); }

/// What the edge runners share: how to name peers, the sizes, and what
/// makes them fail.
class edge_runner : public runner_base {
 public:
  edge_runner(graph_state& g, std::string name, const runner_settings& s, ext::peers& p, const ext::edge_config& cfg)
      : runner_base{g, std::move(name), s}, peers_{&p}, cfg_{cfg}, box_{*g.sys} {}

  const actor& handle() const noexcept { return box_.handle(); }
  /// Edges keep no state: they pass barriers on, lane by lane.
  bool checkpointed() const noexcept override { return false; }

 protected:
  enum class phase { fresh, running, ending, finished };

  /// The first step: mail from now on wakes the runner.
  void arm() { box_.waker().arm(*this); }
  /// The graph fails with `what` (whatever options.on_error says: a lost
  /// peer is not an element's failure).
  step_result fail_with(const std::string& what) noexcept {
    try {
      std::string full = "stream edge '" + name() + "': " + what;
      if (graph_->checkpoints) full += graph_->checkpoints->last_completed();
      runner_base::fail(std::make_exception_ptr(stream::edge_error{full}), error{errc::edge_lost, full});
    } catch (...) {
      runner_base::fail(std::current_exception(), error{errc::edge_lost});
    }
    return stop(false);
  }
  /// Ends the runner; not clean: the peers' side fails too.
  step_result stop(bool clean) noexcept {
    if (phase_ == phase::finished) return step_result::finished;
    phase_ = phase::finished;
    aborting(clean);
    box_.end(clean ? error{} : error{errc::runtime_error, why_stopped()});
    publish_counts();
    finished();
    return step_result::finished;
  }
  /// Parks until mail (or `ready()`, or the graph's cancellation).
  template <class Ready>
  step_result park(Ready&& ready) noexcept {
    publish_counts();
    if (release_unless([&] { return box_.has_mail() || cancelled() || ready(); })) return step_result::idle;
    return step_result::more;
  }
  void publish_counts() noexcept { publish(std::exchange(in_, 0), std::exchange(out_, 0)); }
  std::string peer(std::size_t rank) const {
    try {
      return peers_->describe(rank);
    } catch (...) {
      return "rank " + std::to_string(rank);
    }
  }
  static std::string reason(const error& e) { return e ? e.to_string() : std::string{"ended normally"}; }
  /// What the other side hears when this one stops early.
  std::string why_stopped() const noexcept {
    try {
      const auto e = graph_->error_value();
      return "the graph's part at " + peer(peers_->rank()) + (e ? " failed: " + e.message() : " was cancelled");
    } catch (...) {
      return {};
    }
  }
  /// Called by stop(): tell the other side (a failure), before the actor ends.
  virtual void aborting(bool clean) noexcept = 0;

  ext::peers* peers_;
  ext::edge_config cfg_;
  edge_box box_;
  phase phase_ = phase::fresh;
  std::uint64_t in_ = 0, out_ = 0;  // since the last publish
  std::string failure_;
};

/// The sending side of the edges into one replica of another rank: a port
/// local producers connect to (a lane each), drained in batches to the
/// replica's inlet.
class edge_sender_base : public edge_runner {
 public:
  edge_sender_base(graph_state& g, const runner_settings& s, ext::peers& p, const ext::edge_config& cfg,
                   std::size_t to_rank, std::string inlet)
      : edge_runner{g, "to " + p.describe(to_rank), s, p, cfg}, to_rank_{to_rank}, inlet_name_{std::move(inlet)} {}
  /// Before launch: finds the inlet (blocks up to the peers' connect timeout).
  virtual void resolve() = 0;
  virtual std::size_t lanes() const noexcept = 0;

 protected:
  std::size_t to_rank_;
  std::string inlet_name_;
  actor inlet_;
};

template <class E>
class edge_sender final : public edge_sender_base, public input_side<E> {
 public:
  edge_sender(graph_state& g, const runner_settings& s, ext::peers& p, const ext::edge_config& cfg, std::size_t to_rank,
              std::string inlet)
      : edge_sender_base{g, s, p, cfg, to_rank, std::move(inlet)} {
    this->owner_ = this;
  }
  ~edge_sender() override = default;

  runner_base& taker() noexcept override { return *this; }
  bool remote() const noexcept override { return true; }
  std::size_t lanes() const noexcept override { return this->inputs_.size(); }
  void resolve() override {
    if (lanes() != 0) inlet_ = peers_->find(to_rank_, inlet_name_);
  }
  std::size_t queued() const noexcept override {
    std::size_t n = 0;
    for (auto& c : this->inputs_) n += c->ring.size();
    return n;
  }
  std::size_t capacity() const noexcept override {
    std::size_t n = 0;
    for (auto& c : this->inputs_) n += c->ring.capacity();
    return n;
  }

 protected:
  step_result step(std::size_t) override {
    if (cancelled()) return stop(false);
    if (phase_ == phase::fresh && !start()) return stop(true);
    receive();
    if (!failure_.empty()) return fail_with(failure_);
    if (phase_ == phase::ending) return ending();
    return pass();
  }

  bool has_input() const noexcept override {
    for (auto& c : this->inputs_)
      if (!c->ring.empty() ||
          (c->closed.load(std::memory_order_acquire) && !c->drained.load(std::memory_order_relaxed)) ||
          c->watermark.load(std::memory_order_acquire) != c->watermark_seen.load(std::memory_order_relaxed) ||
          c->barrier.load(std::memory_order_acquire) != c->barrier_seen.load(std::memory_order_relaxed))
        return true;
    return false;
  }

 private:
  struct lane {
    std::uint64_t id = 0;
    ext::batch<E> pending;
    std::uint64_t taken = 0, sent = 0, acked = 0;
    std::int64_t credit = 0;
    std::uint64_t oldest = 0;  // stream::now() when `pending` got its first element
    bool ended = false;        // its end marker is sent
  };

  /// Opens every lane; false: there is none (no local producer feeds it).
  bool start() {
    arm();
    phase_ = phase::running;
    if (this->inputs_.empty()) return false;
    lanes_.resize(this->inputs_.size());
    static std::atomic<std::uint32_t> next{0};
    inlet_->add_monitor(box_.handle());
    for (auto& l : lanes_) {
      l.id = lane_id(peers_->rank(), next.fetch_add(1, std::memory_order_relaxed));
      l.pending.items.reserve(cfg_.batch);
      system().send(inlet_, ext::edge_open{}, l.id, box_.handle());
    }
    return true;
  }

  /// Grants and the inlet's fate.
  void receive() {
    box_.drain([this](message& m) {
      if (m.match<ext::edge_credit, std::uint64_t, std::uint64_t, std::uint64_t>()) {
        auto& [a, id, n, acked] = m.get<ext::edge_credit, std::uint64_t, std::uint64_t, std::uint64_t>();
        for (auto& l : lanes_) {
          if (l.id != id) continue;
          l.credit += static_cast<std::int64_t>(n);
          l.acked = std::max(l.acked, acked);
        }
      } else if (m.match<down_msg>()) {
        const auto& d = m.get<down_msg>();
        if (d.source != inlet_) return;
        inlet_closed_ = true;
        if (d.reason && failure_.empty())
          failure_ = "lost the inlet '" + inlet_name_ + "' at " + peer(to_rank_) + " after " +
                     std::to_string(acknowledged()) + " acknowledged elements: " + reason(d.reason);
      } else if (m.match<exit_msg>() || m.match<kill_msg>()) {
        if (failure_.empty()) failure_ = "stopped by a peer";
      } else {
        count_dead_letter(system());
      }
    });
  }

  std::uint64_t acknowledged() const noexcept {
    std::uint64_t n = 0;
    for (auto& l : lanes_) n += l.acked;
    return n;
  }

  /// Sends l's partial batch, if credit allows; false: it waits for credit.
  bool flush(lane& l) {
    const auto n = l.pending.items.size();
    if (n == 0) return true;
    if (l.credit < static_cast<std::int64_t>(n)) return false;
    l.credit -= static_cast<std::int64_t>(n);
    l.sent += n;
    out_ += n;
    ext::batch<E> msg;
    msg.items.reserve(cfg_.batch);
    std::swap(msg, l.pending);
    l.oldest = 0;
    system().send(inlet_, ext::edge_data{}, l.id, std::move(msg));
    return true;
  }

  /// Loads c's watermark (C6); a new one applies after what c holds now.
  static void sample(channel<E>& c) noexcept {
    const auto w = c.watermark.load(std::memory_order_acquire);
    c.watermark_seen.store(w, std::memory_order_relaxed);
    if (c.watermark_pending || w <= c.watermark_in) return;
    c.watermark_next = w;
    c.watermark_after = c.ring.size();
    c.watermark_pending = true;
  }

  /// One lane: what its channel holds, into batches, with its watermarks
  /// and checkpoint barriers in their places. false: no credit.
  bool drain_lane(channel<E>& c, lane& l, bool& moved) {
    for (;;) {
      sample(c);
      if (c.watermark_pending && c.watermark_after == 0) {
        if (!flush(l)) return false;
        c.watermark_in = c.watermark_next;
        c.watermark_pending = false;
        system().send(inlet_, ext::edge_mark{}, l.id, c.watermark_in);
        moved = true;
        continue;
      }
      if (l.pending.items.size() == cfg_.batch && !flush(l)) return false;
      std::size_t max = cfg_.batch - l.pending.items.size();
      if (c.watermark_pending) max = std::min(max, c.watermark_after);
      // A barrier (C7, C8): the published count first, so that a pass that
      // sees no barrier takes only what was published before it.
      max = std::min(max, c.ring.size());
      if (const auto id = c.barrier.load(std::memory_order_acquire); id != c.barrier_in) {
        c.barrier_seen.store(id, std::memory_order_relaxed);
        const auto left = c.barrier_at.load(std::memory_order_relaxed) - c.ring.taken_total();
        if (left == 0) {
          if (!flush(l)) return false;
          c.barrier_in = id;
          system().send(inlet_, ext::edge_barrier{}, l.id, id);
          moved = true;
          continue;
        }
        max = std::min(max, left);
      }
      auto& items = l.pending.items;
      const auto got = c.ring.consume_runs(max, [&items](E* from, std::size_t n) noexcept {
        items.insert(items.end(), std::make_move_iterator(from), std::make_move_iterator(from + n));  // reserved
      });
      if (got == 0) return true;
      if (l.oldest == 0) l.oldest = stream::now();
      if (c.watermark_pending) c.watermark_after -= got;
      l.taken += got;
      in_ += got;
      moved = true;
    }
  }

  step_result pass() noexcept {
    try {
      bool moved = false, starved = false, open = false;
      for (std::size_t k = 0; k < lanes_.size(); ++k) {
        auto& c = *this->inputs_[k];
        auto& l = lanes_[k];
        if (l.ended) continue;
        if (!drain_lane(c, l, moved)) {
          starved = true;
          continue;
        }
        if (c.closed.load(std::memory_order_acquire) && c.ring.empty()) {
          if (!flush(l)) {
            starved = true;
            continue;
          }
          c.drained.store(true, std::memory_order_relaxed);
          system().send(inlet_, ext::edge_end{}, l.id, l.sent);
          l.ended = true;
          moved = true;
          continue;
        }
        open = true;
      }
      if (moved)
        for (auto& c : this->inputs_) c->room_made();
      if (!open && !starved && all_ended()) {
        phase_ = phase::ending;
        return ending();
      }
      if (starved) return park([] { return false; });  // credit comes only as mail
      if (moved) {
        publish_counts();
        return step_result::more;
      }
      return idle();
    } catch (...) {
      runner_base::fail(std::current_exception());  // out of memory
      return stop(false);
    }
  }

  bool all_ended() const noexcept {
    return std::all_of(lanes_.begin(), lanes_.end(), [](const lane& l) { return l.ended; });
  }

  /// The input ran dry: a partial batch goes now if its producer is idle
  /// (nothing more comes soon) or it is max_delay old; otherwise a timer
  /// brings the runner back by then.
  step_result idle() {
    const auto now = stream::now();
    const auto delay = static_cast<std::uint64_t>(cfg_.max_delay.count()) * 1000;
    std::uint64_t due = 0;
    bool starved = false;
    for (std::size_t k = 0; k < lanes_.size(); ++k) {
      auto& l = lanes_[k];
      if (l.pending.items.empty()) continue;
      auto* producer = this->inputs_[k]->producer;
      const bool dry = producer == nullptr || !producer->active();
      if (dry || now - l.oldest >= delay) {
        if (!flush(l)) starved = true;
      } else {
        due = due == 0 ? l.oldest + delay : std::min(due, l.oldest + delay);
      }
    }
    if (starved) return park([] { return false; });
    if (due != 0) wake_at(due);
    return park([this] { return has_input(); });
  }

  /// Every end marker is sent: waits until everything is acknowledged.
  step_result ending() {
    bool all = true;
    for (auto& l : lanes_) all = all && l.acked >= l.sent;
    if (all) return stop(true);
    if (inlet_closed_) {
      // The inlet ended normally, its last grant maybe still on its way.
      const auto now = stream::now();
      if (grace_ == 0) {
        grace_ = now + 1'000'000'000;
        wake_at(grace_);
      } else if (now >= grace_) {
        std::string lost;
        for (auto& l : lanes_)
          if (l.acked < l.sent)
            lost += (lost.empty() ? "" : "; ") + std::string{"lane "} + std::to_string(l.id & 0xffffffffU) + ": " +
                    std::to_string(l.acked) + " of " + std::to_string(l.sent) + " acknowledged";
        return fail_with("the inlet '" + inlet_name_ + "' at " + peer(to_rank_) + " ended early (" + lost + ")");
      }
    }
    return park([] { return false; });
  }

  void aborting(bool clean) noexcept override {
    if (clean || !inlet_) return;
    try {
      system().send_exit(inlet_, error{errc::runtime_error, why_stopped()});
    } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory: the monitor tells the inlet
    }
  }

  std::vector<lane> lanes_;
  bool inlet_closed_ = false;
  std::uint64_t grace_ = 0;
};

/// The receiving side: the inlet of one local replica fed from other ranks.
class edge_receiver_base : public edge_runner {
 public:
  edge_receiver_base(graph_state& g, const runner_settings& s, ext::peers& p, const ext::edge_config& cfg,
                     std::string inlet)
      : edge_runner{g, "from other ranks", s, p, cfg}, inlet_name_{std::move(inlet)} {}
  void rename(std::string n) { name_ = std::move(n); }
  /// Before launch: makes the inlet findable.
  void publish_inlet() { peers_->publish(handle(), inlet_name_); }
  /// One more remote producer (at build).
  virtual void add_lane(std::size_t producer_slot) = 0;
  /// The slots of the remote producers (one lane each).
  const std::vector<std::size_t>& producers() const noexcept { return producers_; }
  /// Watermarks come through it (some remote producer has them).
  void carry_watermarks() noexcept { watermarks_ = true; }
  bool generates_watermarks() const noexcept override { return watermarks_; }

 protected:
  std::string inlet_name_;
  std::vector<std::size_t> producers_;
  bool watermarks_ = false;
};

template <class E>
class edge_receiver final : public edge_receiver_base {
 public:
  edge_receiver(graph_state& g, const runner_settings& s, ext::peers& p, const ext::edge_config& cfg, std::string inlet,
                port<E>& into, std::size_t capacity)
      : edge_receiver_base{g, s, p, cfg, std::move(inlet)}, into_{&into}, capacity_{capacity} {}

  void add_lane(std::size_t producer_slot) override {
    producers_.push_back(producer_slot);
    auto l = std::make_unique<lane>();
    downstream<E, direct> d;
    d.ports.push_back(into_);
    l->out.attach(d, capacity_, this);
    lanes_.push_back(std::move(l));
  }

  std::size_t queued() const noexcept override { return queued_.load(std::memory_order_relaxed); }

 protected:
  step_result step(std::size_t) override {
    if (cancelled()) return stop(false);
    if (phase_ == phase::fresh) start();
    try {
      box_.drain([this](message& m) { on_mail(m); });
      if (!failure_.empty()) return fail_with(failure_);
      if (phase_ == phase::ending) return ending();
      return pass();
    } catch (...) {
      runner_base::fail(std::current_exception());  // out of memory
      return stop(false);
    }
  }
  bool has_input() const noexcept override { return false; }  // mail only (box_.has_mail)

 private:
  struct barrier_mark {
    std::uint64_t id;
  };
  using event = std::variant<ext::batch<E>, std::uint64_t, barrier_mark>;  // a batch, a watermark, a barrier
  struct lane {
    std::uint64_t id = 0;
    bool opened = false;
    actor credit_to;
    std::uint64_t received = 0, granted = 0, consumed = 0;
    bool ended = false, closed = false, gone = false;
    std::deque<event> events;
    std::size_t pos = 0;  // in the front batch
    outlet<E, direct> out;
  };

  void start() {
    arm();
    phase_ = phase::running;
    open_deadline_ = stream::now() + static_cast<std::uint64_t>(peers_->connect_timeout().count()) * 1'000'000;
    wake_at(open_deadline_);
  }

  lane* find(std::uint64_t id) noexcept {
    for (auto& l : lanes_)
      if (l->opened && l->id == id) return l.get();
    return nullptr;
  }
  static std::string sender(std::uint64_t id) { return "lane " + std::to_string(id & 0xffffffffU); }
  std::string from(std::uint64_t id) const { return sender(id) + " from " + peer(rank_of_lane(id)); }

  void on_mail(message& m) {
    if (m.match<ext::edge_data, std::uint64_t, ext::batch<E>>()) {
      auto& [a, id, b] = m.get<ext::edge_data, std::uint64_t, ext::batch<E>>();
      auto* l = find(id);
      if (l == nullptr || l->ended)
        return fail(from(id) + (l ? ": a batch after its end" : ": a batch before its open"));
      if (l->received + b.items.size() > l->granted) return fail(from(id) + ": a batch beyond its credit");
      l->received += b.items.size();
      queued_.store(queued_.load(std::memory_order_relaxed) + b.items.size(), std::memory_order_relaxed);
      in_ += b.items.size();
      l->events.emplace_back(std::in_place_index<0>, std::move(b));
    } else if (m.match<ext::edge_mark, std::uint64_t, std::uint64_t>()) {
      auto& [a, id, w] = m.get<ext::edge_mark, std::uint64_t, std::uint64_t>();
      if (auto* l = find(id); l != nullptr && !l->ended) l->events.emplace_back(std::in_place_index<1>, w);
      else fail(from(id) + ": a watermark outside its stream");
    } else if (m.match<ext::edge_barrier, std::uint64_t, std::uint64_t>()) {
      auto& [a, id, b] = m.get<ext::edge_barrier, std::uint64_t, std::uint64_t>();
      if (auto* l = find(id); l != nullptr && !l->ended) l->events.emplace_back(barrier_mark{b});
      else fail(from(id) + ": a checkpoint barrier outside its stream");
    } else if (m.match<ext::edge_open, std::uint64_t, actor>()) {
      auto& [a, id, credit_to] = m.get<ext::edge_open, std::uint64_t, actor>();
      open(id, credit_to);
    } else if (m.match<ext::edge_end, std::uint64_t, std::uint64_t>()) {
      auto& [a, id, total] = m.get<ext::edge_end, std::uint64_t, std::uint64_t>();
      auto* l = find(id);
      if (l == nullptr || l->ended) return fail(from(id) + ": an end marker " + (l ? "twice" : "before its open"));
      if (l->received != total)
        return fail(from(id) + " sent " + std::to_string(total) + " elements, " + std::to_string(l->received) +
                    " arrived");
      l->ended = true;
    } else if (m.match<down_msg>()) {
      const auto& d = m.get<down_msg>();
      for (auto& l : lanes_) {
        if (!l->opened || l->credit_to != d.source) continue;
        // A sender's actor ends normally only once it has every
        // acknowledgement, after its end marker (which the down may overtake).
        if (l->ended || !d.reason) l->gone = true;
        else fail("lost " + from(l->id) + " after " + std::to_string(l->received) + " elements: " + reason(d.reason));
      }
    } else if (m.match<exit_msg>()) {
      fail("ended by a peer: " + reason(m.get<exit_msg>().reason));
    } else if (m.match<kill_msg>()) {
      fail("ended by a peer: " + reason(m.get<kill_msg>().reason));
    } else {
      count_dead_letter(system());
    }
  }
  void fail(const std::string& why) {
    if (failure_.empty()) failure_ = "inlet '" + inlet_name_ + "': " + why;
  }

  void open(std::uint64_t id, const actor& credit_to) {
    if (find(id) != nullptr) return fail(from(id) + " opened twice");
    auto it = std::find_if(lanes_.begin(), lanes_.end(), [](const std::unique_ptr<lane>& l) { return !l->opened; });
    if (it == lanes_.end())
      return fail("unexpected " + from(id) + " (" + std::to_string(lanes_.size()) + " lanes expected)");
    auto& l = **it;
    l.opened = true;
    l.id = id;
    l.credit_to = credit_to;
    l.granted = window_;
    ++opened_;
    if (credit_to) credit_to->add_monitor(handle());
    system().send(credit_to, ext::edge_credit{}, id, static_cast<std::uint64_t>(window_), std::uint64_t{0});
  }

  /// Grants l what was consumed since its last grant.
  void grant(lane& l) {
    if (l.consumed == 0) return;
    const std::uint64_t n = std::exchange(l.consumed, 0);
    l.granted += n;
    system().send(l.credit_to, ext::edge_credit{}, l.id, n, l.granted - window_);
  }

  /// Pushes l's events into its channel until it is full.
  void push(lane& l, bool& moved) {
    auto& out = l.out;
    if (out.blocked() && !out.flush()) return;
    while (!l.events.empty()) {
      auto& ev = l.events.front();
      if (ev.index() == 1) {
        out.watermark(std::get<1>(ev));
        l.events.pop_front();
        continue;
      }
      if (ev.index() == 2) {
        out.barrier(std::get<2>(ev).id);
        l.events.pop_front();
        continue;
      }
      auto& items = std::get<0>(ev).items;
      const std::size_t from = l.pos;
      while (l.pos < items.size()) {
        l.pos += out.send_run(items.data() + l.pos, items.size() - l.pos);
        if (l.pos == items.size()) break;
        out.send(std::move(items[l.pos++]));  // the channel is full: parks it
        if (out.blocked()) break;
      }
      const std::size_t n = l.pos - from;
      if (n != 0) {
        moved = true;
        l.consumed += n;
        queued_.store(queued_.load(std::memory_order_relaxed) - n, std::memory_order_relaxed);
        // Counted at once: the next lane's pushes store this runner's items
        // out as counted so far plus their own (channel.hpp, C9).
        publish(0, out.take_sent());
      }
      if (l.pos == items.size()) {
        l.pos = 0;
        l.events.pop_front();
      }
      if (out.blocked()) return;
    }
    if (l.ended && !l.closed) {
      out.close();
      l.closed = true;
      moved = true;
    }
  }

  step_result pass() {
    bool moved = false, blocked = false;
    for (auto& l : lanes_) {
      if (l->closed) continue;
      push(*l, moved);
      if (l->out.blocked()) blocked = true;
      // A quarter window at a time (a grant per batch cost a message each
      // way per batch), whether or not the channel has filled up: granting
      // only once it had room again left the sender waiting for whole
      // windows, exactly when the consumer here is the slow side. All of it
      // once the lane has ended (its sender waits).
      if (l->consumed >= std::max(cfg_.batch, window_ / 4) || l->ended) grant(*l);
    }
    for (auto& l : lanes_) l->out.sweep();
    if (std::all_of(lanes_.begin(), lanes_.end(), [](const std::unique_ptr<lane>& l) { return l->closed; })) {
      for (auto& l : lanes_) grant(*l);
      phase_ = phase::ending;
      linger_until_ = stream::now() + 10'000'000'000ULL;
      wake_at(linger_until_);
      return ending();
    }
    if (moved) {
      publish_counts();
      return step_result::more;
    }
    if (opened_ < lanes_.size() && stream::now() >= open_deadline_)
      return fail_with("inlet '" + inlet_name_ + "': " + std::to_string(opened_) + " of " +
                       std::to_string(lanes_.size()) + " lanes opened within the connect timeout (" +
                       std::to_string(peers_->connect_timeout().count()) + " ms)");
    if (blocked) {
      blocked_from_now();
      std::vector<const channel<E>*> full;
      for (auto& l : lanes_)
        if (l->out.blocked()) full.push_back(l->out.wait_for_room());
      return park([full = std::move(full)] {
        return std::any_of(full.begin(), full.end(), [](const channel<E>* c) { return c->has_room(); });
      });
    }
    unblocked();
    for (auto& l : lanes_) grant(*l);  // dry: everything taken is acknowledged before waiting
    return park([] { return false; });
  }

  /// Every lane has closed: waits (up to a linger) until every sender has
  /// its last acknowledgement, so that this process may end at once after.
  step_result ending() {
    const bool gone = std::all_of(lanes_.begin(), lanes_.end(), [](const std::unique_ptr<lane>& l) { return l->gone; });
    if (gone || stream::now() >= linger_until_) return stop(true);
    return park([] { return false; });
  }

  void aborting(bool /*clean*/) noexcept override {
    for (auto& l : lanes_)
      if (!l->closed) {
        l->out.discard();
        l->out.close();
        l->closed = true;
      }
  }

  port<E>* into_;
  std::size_t capacity_;
  std::size_t window_ = cfg_.window_of<E>();
  std::vector<std::unique_ptr<lane>> lanes_;
  std::size_t opened_ = 0;
  std::uint64_t open_deadline_ = 0, linger_until_ = 0;
  std::atomic<std::size_t> queued_{0};
};

/// Once every runner is made: which runners watermarks reach (over the
/// slots of every process), and the stages.
inline void settle_split(split_plan& plan, graph_state& g) {
  auto& slots = plan.slots;
  const auto n = slots.size();
  std::vector<char> timed(n, 0);  // watermarks leave this slot
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (timed[i]) continue;
      bool t = slots[i].generates;
      for (auto p : slots[i].producers) t = t || timed[p];
      if (t) timed[i] = 1, changed = true;
    }
  }
  std::vector<std::size_t> stage(n, 0);
  std::size_t s = 0;
  for (std::size_t i = n; i-- > 0;) {  // built back to front
    if (slots[i].replica == 0 && i + 1 < n) ++s;
    stage[i] = s;
  }
  for (std::size_t i = 0; i < n; ++i) {
    auto* r = slots[i].local;
    if (r == nullptr) continue;
    r->set_stage(stage[i]);
    for (auto p : slots[i].producers)
      if (timed[p]) r->set_event_time();
  }
  for (auto* snd : plan.senders) snd->set_stage(stage[snd->settings().slot]);
  for (auto& [consumer, rcv] : plan.receivers) {
    rcv->set_stage(stage[rcv->settings().slot]);
    std::vector<std::size_t> from;
    for (auto p : rcv->producers()) {
      if (timed[p]) rcv->carry_watermarks();
      if (std::find(from.begin(), from.end(), slots[p].rank) == from.end()) from.push_back(slots[p].rank);
    }
    std::sort(from.begin(), from.end());
    std::string name = from.size() == 1 ? "from " + plan.peers->describe(from[0]) : "from ranks";
    for (std::size_t i = 0; from.size() > 1 && i < from.size(); ++i) name += (i ? "," : " ") + std::to_string(from[i]);
    rcv->rename(std::move(name));
  }
  g.staged = true;
  g.rank = plan.rank();
}

/// Senders no local producer connected to: the replica they stand for is
/// fed from other ranks only. They go before the graph starts.
inline void drop_idle_senders(split_plan& plan, graph_state& g) {
  std::vector<edge_sender_base*> keep;
  for (auto* s : plan.senders)
    if (s->lanes() != 0) keep.push_back(s);
  if (keep.size() == plan.senders.size()) return;
  auto& rs = g.runners;
  rs.erase(std::remove_if(rs.begin(), rs.end(),
                          [&](const std::unique_ptr<runner_base>& r) {
                            return std::find(plan.senders.begin(), plan.senders.end(), r.get()) != plan.senders.end() &&
                                   std::find(keep.begin(), keep.end(), r.get()) == keep.end();
                          }),
           rs.end());
  plan.senders = std::move(keep);
}

/// The edge runners of element type E. ext::spawn_split installs them for
/// every element type of its graph (install_edges): a graph that is never
/// split does not compile them (they would add a quarter to the time a
/// stream-heavy file takes to compile).
template <class E>
struct edge_maker {
  port<E>* (*sender)(builder&, const runner_settings& mine, std::size_t to_rank, std::size_t slot);
  edge_receiver_base* (*receiver)(builder&, const runner_settings& s, std::size_t slot, port<E>& into);
};

template <class E>
port<E>* make_edge_sender(builder& b, const runner_settings& mine, std::size_t to_rank, std::size_t slot) {
  auto& plan = *b.split;
  auto snd = std::make_unique<edge_sender<E>>(b.graph, mine, *plan.peers, plan.cfg, to_rank, plan.inlet_name(slot));
  auto* p = snd.get();
  plan.senders.push_back(p);
  b.graph.runners.push_back(std::move(snd));
  return p;
}
template <class E>
edge_receiver_base* make_edge_receiver(builder& b, const runner_settings& s, std::size_t slot, port<E>& into) {
  auto& plan = *b.split;
  auto r =
      std::make_unique<edge_receiver<E>>(b.graph, s, *plan.peers, plan.cfg, plan.inlet_name(slot), into, b.capacity);
  auto* p = r.get();
  b.graph.runners.push_back(std::move(r));
  return p;
}
template <class E>
inline constexpr edge_maker<E> edge_makers{&make_edge_sender<E>, &make_edge_receiver<E>};

/// Makes the edge runners of element type E available to `plan`'s build.
template <class E>
void install_edges(split_plan& plan) {
  plan.makers.emplace(std::type_index{typeid(E)}, &edge_makers<E>);
}
template <class E>
const edge_maker<E>& maker_of(const split_plan& plan) {
  const auto it = plan.makers.find(std::type_index{typeid(E)});
  if (it == plan.makers.end())
    throw std::logic_error{"troupe: internal: an element type of a split graph has no edge runners"};
  return *static_cast<const edge_maker<E>*>(it->second);
}

/// Records that `producer` feeds every replica in `next`; for each local
/// replica fed from another rank, its receiver gets a lane.
template <class E, class Route>
void note_edges(builder& b, std::size_t producer, const downstream<E, Route>& next) {
  auto& plan = *b.split;
  const bool remote = plan.slots[producer].rank != plan.rank();
  for (auto* p : next.ports) {
    auto& consumer = p->taker();
    const std::size_t slot = consumer.settings().slot;
    plan.slots[slot].producers.push_back(producer);
    if (!remote || p->remote()) continue;
    auto& rcv = plan.receivers[&consumer];
    if (rcv == nullptr) {
      runner_settings s = consumer.settings();
      s.dedicated = false;
      rcv = maker_of<E>(plan).receiver(b, s, slot, *p);
    }
    rcv->add_lane(producer);
  }
}
template <class E, class... Parts>
void note_edges(builder& b, std::size_t producer, const fanout<E, Parts...>& next) {
  std::apply([&](const auto&... part) { (note_edges(b, producer, part), ...); }, next.parts);
}
inline void note_edges(builder&, std::size_t, const no_downstream&) {}

/// A slot of this rank (its runner is made): recorded, with its edges.
template <class Next>
void local_slot(builder& b, runner_base& r, const Next& next) {
  if (b.split == nullptr) return;
  auto& s = b.split->slots[r.settings().slot];
  s.local = &r;
  s.generates = r.generates_watermarks();
  note_edges(b, r.settings().slot, next);
}

/// A slot of another rank: no runner; its edges with this rank's runners.
/// Returns the port its producers here write into (a sender, made now; it
/// sends nothing if no producer here connects to it).
template <class E, class Next>
port<std::conditional_t<std::is_void_v<E>, char, E>>* remote_slot(builder& b, const runner_settings& s, bool generates,
                                                                  const Next& next) {
  auto& plan = *b.split;
  plan.slots[s.slot].generates = generates;
  note_edges(b, s.slot, next);
  if constexpr (std::is_void_v<E>) {
    return nullptr;
  } else {
    runner_settings mine = s;
    mine.rank = plan.rank();
    mine.dedicated = false;
    return maker_of<E>(plan).sender(b, mine, s.rank, s.slot);
  }
}

}  // namespace troupe::detail
