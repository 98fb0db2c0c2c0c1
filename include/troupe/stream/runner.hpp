// runner.hpp: one replica of a node at work (see channel.hpp for the protocol).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <thread>
#include <utility>
#include <vector>

#include "troupe/stream/node.hpp"

namespace troupe::stream::detail {

std::string demangle(const char* mangled);

template <class N>
std::string node_name() {
  if constexpr (requires { N::kind; }) return N::kind;
  else return demangle(typeid(N).name());
}

/// The input channels of a replica (none for a source).
template <class T>
class input_side : public port<T> {
 public:
  channel<T>* connect(std::size_t capacity) override {
    inputs_.push_back(std::make_unique<channel<T>>(capacity, owner_));
    return inputs_.back().get();
  }

 protected:
  runner_base* owner_ = nullptr;
  std::vector<std::unique_ptr<channel<T>>> inputs_;
};
template <>
class input_side<void> {
 protected:
  runner_base* owner_ = nullptr;
};

template <class N>
class runner final : public runner_base, public input_side<typename N::in_type> {
  using In = typename N::in_type;
  using Out = typename N::out_type;
  static constexpr bool is_source = std::is_void_v<In>;
  static constexpr bool measures_latency = std::is_void_v<Out> && !is_source && stamped<In>;
  static constexpr std::size_t chunk = 64;  // elements taken from one channel before looking at the next

 public:
  runner(graph_state& g, const N& prototype, const runner_settings& s)
      : runner_base{g, node_name<N>(), s}, node_{prototype}, batch_{s.batch},
        sample_every_{s.latency_sample == 0 ? 1 : s.latency_sample} {
    this->owner_ = this;
    if constexpr (measures_latency) latency_ = std::make_unique<latency_histogram>();
  }

  template <class T = Out>
    requires(!std::is_void_v<T>)
  void attach(const downstream<T>& d, std::size_t capacity) {
    out_.attach(d, capacity, this);
    static_cast<emitter<Out>&>(node_).out_ = &out_;
  }

  std::size_t queued() const noexcept override {
    std::size_t n = 0;
    if constexpr (!is_source)
      for (auto& c : this->inputs_) n += c->ring.size();
    return n;
  }
  bool room_ready() const noexcept override { return out_.has_room(blocked_on_); }
  void add_latency(latency_histogram& h) const noexcept override {
    if (latency_) h.merge(*latency_);
  }

 protected:
  step_result step(std::size_t) override {
    if (cancelled()) return end(false);
    if (phase_ == phase::fresh) {
      phase_ = phase::running;
      if (!guard([&] { node_.on_start(); })) return end(false);
    }
    if (out_.blocked() && !out_.flush()) return blocked(0);
    if (phase_ == phase::stopping) return end(true);
    if constexpr (is_source) return produce();
    else return drain();
  }

  bool has_input() const noexcept override {
    if constexpr (!is_source) {
      for (auto& c : this->inputs_)
        if (!c->ring.empty() || (c->closed.load(std::memory_order_acquire) && !c->drained.load(std::memory_order_relaxed)))
          return true;
    }
    return cancelled();
  }

 private:
  enum class phase { fresh, running, stopping, finished };

  template <class F>
  bool guard(F&& f) noexcept {
    try {
      f();
      return true;
    } catch (...) {
      fail(std::current_exception());
      return false;
    }
  }

  // End of a batch: counters, and wake whoever waits on us (consumers with
  // data, producers with room). Both checks follow a fence.
  void batch_done(std::uint64_t in) noexcept {
    publish(in, out_.take_sent());
    out_.sweep();
    if constexpr (!is_source) {
      if (in != 0) {  // we made room: does a producer wait for it?
        if constexpr (std::is_void_v<Out>) std::atomic_thread_fence(std::memory_order_seq_cst);
        for (auto& c : this->inputs_) c->room_made();
      }
    }
  }

  // An output channel is full: sleep until its consumer makes room.
  step_result blocked(std::uint64_t in) noexcept {
    batch_done(in);
    blocked_on_ = out_.blocked_on();
    if (linger(true)) return step_result::blocked;  // room again: retry soon
    // A pooled runner whose worker has nothing else to do polls through the
    // scheduler (cheaper than a sleep and a wake-up per refill); otherwise
    // it sleeps until its consumer makes room.
    // Polling is bounded: a runner blocked for long (a slow consumer) sleeps.
    if (blocked_polls_ < max_blocked_polls && may_poll()) {
      ++blocked_polls_;
      return step_result::blocked;
    }
    auto* c = out_.wait_for_room();
    if (release_unless([this, c] { return out_.has_room(c) || cancelled(); })) return step_result::idle;
    return step_result::blocked;
  }

  step_result more(std::uint64_t in) noexcept {
    blocked_polls_ = 0;
    batch_done(in);
    return step_result::more;
  }

  // The input has ended: on_stop, flush what it sent, close the outputs.
  step_result stop(std::uint64_t in) noexcept {
    phase_ = phase::stopping;
    if (!guard([&] { node_.on_stop(); })) return end(false);
    if (out_.blocked() && !out_.flush()) return blocked(in);
    publish(in, 0);
    return end(true);
  }

  step_result end(bool clean) noexcept {
    if (!clean) out_.discard();
    publish(0, out_.take_sent());
    phase_ = phase::finished;
    out_.close();
    finished();
    return step_result::finished;
  }

  step_result produce() noexcept {
    if constexpr (is_source) {
      for (std::size_t i = 0; i < batch_; ++i) {
        bool going = false;
        if (!guard([&] { going = node_.produce(); })) return end(false);
        if (!going) return stop(0);
        if (out_.blocked()) return blocked(0);
        if (auto& at = static_cast<emitter<Out>&>(node_).resume_at_; at != 0) return pause(std::exchange(at, 0));
      }
    }
    return more(0);
  }

  // A paced source is ahead: come back at `t`, but not sooner than
  // min_pause from now. A source paced faster than one element per
  // min_pause thus sends what has come due in bursts (as CAF's timer-driven
  // sources do) instead of polling the clock through the scheduler between
  // elements, which kept a worker busy whatever the rate.
  static constexpr std::uint64_t min_pause = 50'000;  // ns
  step_result pause(std::uint64_t t) noexcept {
    batch_done(0);
    const auto now = stream::now();
    if (t <= now) return step_result::more;
    t = std::max(t, now + min_pause);
    if (this->dedicated()) {
      for (std::uint64_t n; !cancelled() && (n = stream::now()) < t;)
        std::this_thread::sleep_for(std::chrono::nanoseconds{std::min<std::uint64_t>(t - n, 1'000'000)});
      return step_result::more;
    }
    // The timer goes first; if it fires before we have let go, the
    // re-check below sees the time has come and we keep running.
    this->wake_at(t);
    if (this->release_unless([t] { return stream::now() >= t; })) return step_result::idle;
    return step_result::more;
  }

  step_result drain() noexcept {
    if constexpr (!is_source) {
      std::uint64_t in = 0;
      auto& inputs = this->inputs_;
      const std::size_t n = inputs.size();
      for (;;) {
        bool any = false;
        for (std::size_t k = 0; k < n; ++k) {
          auto& ring = inputs[cursor_]->ring;
          bool failed = false;
          const auto got = ring.consume(std::min(chunk, batch_ - in), [&](In& v) noexcept {
            if constexpr (measures_latency) {
              if (++sampled_ == sample_every_) {
                sampled_ = 0;
                latency_->record(stream::now() - static_cast<std::uint64_t>(v.stamp));
              }
            }
            if (!guard([&] { node_.consume(v); })) {
              failed = true;
              return false;
            }
            return !out_.blocked();
          });
          in += got;
          if (got != 0) any = true;
          if (failed) return end(false);
          if (out_.blocked()) return blocked(in);
          if (in == batch_) return more(in);
          if (++cursor_ == n) cursor_ = 0;
        }
        if (any) continue;
        // Nothing queued: has every input ended?
        std::size_t open = 0;
        for (auto& c : inputs) {
          if (c->drained.load(std::memory_order_relaxed)) continue;
          if (c->closed.load(std::memory_order_acquire) && c->ring.empty()) c->drained.store(true, std::memory_order_relaxed);
          else ++open;
        }
        if (open == 0) return stop(in);
        // Wait a little for more before ending the batch: when producer and
        // consumer run neck and neck, this keeps the per-batch fences off the
        // per-element path. Producers sleeping for room are woken first (the
        // fenced check follows in batch_done if the wait ends empty).
        // Pooled runners end the activation instead (below), so that the
        // runners sharing their worker get their turn.
        if (!this->settings_.dedicated) break;
        out_.publish();
        if (in != 0)
          for (auto& c : inputs) c->room_made();
        if (!linger()) break;
        if (cancelled()) return end(false);
      }
      batch_done(in);
      if (!this->settings_.dedicated && linger()) return step_result::more;
      return release() ? step_result::idle : step_result::more;
    }
    return step_result::more;
  }

  N node_;
  decltype(std::declval<outlet<Out>&>().blocked_on()) blocked_on_ = nullptr;
  std::size_t batch_;
  static constexpr unsigned max_blocked_polls = 256;  // polls since the last full batch
  unsigned blocked_polls_ = 0;
  std::size_t sample_every_;
  std::size_t sampled_ = 0;
  std::unique_ptr<latency_histogram> latency_;
  phase phase_ = phase::fresh;
  std::size_t cursor_ = 0;
  outlet<Out> out_;
};

}  // namespace troupe::stream::detail
