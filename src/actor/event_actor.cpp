#include "troupe/actor/event_actor.hpp"
#include "troupe/detail/system_access.hpp"

#include <deque>
#include <thread>
#include <utility>

#include "../runtime/scheduler.hpp"
#include "../runtime/timer.hpp"
#include "troupe/actor/actor_system.hpp"
#include "troupe/util/cache.hpp"

namespace troupe {

namespace detail {

void reply_empty(actor_cell& self, message_node& request) noexcept {
  if (!request.is_request() || !request.sender) return;
  try {
    actor_cell::deliver(request.sender, make_message(self.handle(), response_bit | request.id));
  } catch (...) {
    // Out of memory: the requester's timeout must do.
  }
}

namespace {
class delivery_task final : public timer_task {
 public:
  delivery_task(actor dest, message_node* n, priority p) : dest_{std::move(dest)}, msg_{n}, prio_{p} {}
  ~delivery_task() override {
    if (msg_ != nullptr) destroy_message(msg_);
  }
  void fire() noexcept override { actor_cell::deliver(dest_, std::exchange(msg_, nullptr), prio_); }
  // At shutdown the receiver has ended: delivering makes it a counted dead letter.
  void discard() noexcept override { fire(); }

 private:
  actor dest_;
  message_node* msg_;
  priority prio_;
};
}  // namespace

void deliver_later(actor_system& sys, const actor& dest, message_node* n, std::chrono::nanoseconds delay, priority p) {
  std::unique_ptr<timer_task> task;
  try {
    task = std::make_unique<delivery_task>(dest, n, p);
  } catch (...) {
    destroy_message(n);
    throw;
  }
  detail::system_access::add_timer(sys, std::chrono::steady_clock::now() + delay, std::move(task));
}

}  // namespace detail

struct event_actor::kept_state {
  std::vector<behavior> below;                // the behavior stack under bhvr_
  behavior retired;                           // replaced while its handler ran: freed after it
  std::deque<detail::message_node*> skipped;  // offered again on a behavior change
  std::deque<detail::message_node*> held;     // run before the mailbox, when not awaiting
  std::size_t awaiting = 0;                   // awaited requests still open
  bool replaying = false;                     // a dispatch below runs `held`

  bool ready() const noexcept { return awaiting == 0 && !held.empty(); }
};

event_actor::event_actor() : sched_{&detail::system_access::scheduler_of(system())} {}
event_actor::~event_actor() = default;

event_actor::kept_state& event_actor::kept() {
  if (!kept_) kept_ = std::make_unique<kept_state>();
  return *kept_;
}

void event_actor::retire_running_behavior() {
  // The handler that runs belongs to bhvr_: keep it alive until it returns
  // (dispatch frees it then, on its slow path: kept_ exists from here on).
  if (current_ != nullptr) {
    auto& k = kept();
    if (k.retired.empty()) k.retired = std::move(bhvr_);
  }
}

void event_actor::note_skip() { kept(); }

void event_actor::become(behavior b) {
  retire_running_behavior();
  bhvr_ = std::move(b);
  behavior_changed();
}

void event_actor::become(keep_behavior_t, behavior b) {
  kept().below.push_back(std::move(bhvr_));  // moves the handlers, running or not: they stay alive
  bhvr_ = std::move(b);
  behavior_changed();
}

void event_actor::unbecome() {
  retire_running_behavior();
  if (kept_ && !kept_->below.empty()) {
    bhvr_ = std::move(kept_->below.back());
    kept_->below.pop_back();
  } else {
    bhvr_ = behavior{};
  }
  behavior_changed();
}

void event_actor::behavior_changed() {
  recheck_alive_ = true;  // the new behavior may be empty
  if (!kept_ || kept_->skipped.empty()) return;
  // Skipped messages came before every held one: they go first, in order.
  auto& k = *kept_;
  k.held.insert(k.held.begin(), k.skipped.begin(), k.skipped.end());
  k.skipped.clear();
}

void event_actor::mark_awaited(std::uint64_t id) {
  auto it = pending_->find(id);
  if (it == pending_->end() || !it->second || it->second->awaited) return;
  it->second->awaited = true;
  ++kept().awaiting;
}

bool event_actor::passes_await(detail::message_node& n) const {
  auto awaited = [&](std::uint64_t id) {
    if (!pending_) return false;
    auto it = pending_->find(id);
    return it != pending_->end() && it->second && it->second->awaited;
  };
  if (n.is_response()) return awaited(n.id & ~detail::response_bit);
  if (!n.vt->system) return false;
  if (n.holds<detail::timeout_msg>()) return awaited(std::get<0>(detail::values_of<detail::timeout_msg>(n)).request_id);
  return n.holds<exit_msg>() || n.holds<detail::kill_msg>();  // down messages wait
}

void event_actor::after_handler(detail::message_node* n, bool skipped) {
  auto& k = *kept_;
  if (skipped) k.skipped.push_back(n);
  k.retired = behavior{};
  // Messages freed by this handler (an awaited response came, the behavior
  // changed) are older than anything still in the mailbox: they run now, in
  // order, until one of them awaits again or the actor quits.
  if (k.replaying) return;  // the loop below is already running them
  k.replaying = true;
  while (!quit_ && k.ready()) {
    auto* m = k.held.front();
    k.held.pop_front();
    dispatch(m);
  }
  k.replaying = false;
}

void event_actor::wake() noexcept {
  if (sem_) sem_->release();
  else sched_->schedule(this);
}

void event_actor::on_exit() noexcept {
  if (kept_) {
    error gone{errc::actor_exited, "the receiver ended before handling it"};
    for (auto* n : kept_->skipped) dead_letter(n, gone);
    for (auto* n : kept_->held) dead_letter(n, gone);
    kept_.reset();
  }
  bhvr_ = behavior{};
  pending_.reset();
  hooks_.reset();
  local_actor::on_exit();
}

// Actors without an intake gate (all but kernel actors) run the loop
// without its checks; gated actors override resume() with resume_gated().
detail::resume_result event_actor::resume(std::size_t throughput) { return run<false>(throughput); }
detail::resume_result event_actor::resume_gated(std::size_t throughput) { return run<true>(throughput); }

template <bool Gated>
detail::resume_result event_actor::run(std::size_t throughput) {
  using detail::resume_result;
  std::size_t consumed = 0;
  if (!initialized_) {
    initialized_ = true;
    consumed = 1;  // the token spawn put in the mailbox count
    try {
      // A function may also call become() itself and return nothing.
      if (auto b = make_behavior(); !b.empty()) bhvr_ = std::move(b);
    } catch (const std::exception& e) {
      quit(error{errc::unhandled_exception, e.what()});
    } catch (...) {
      quit(error{errc::unhandled_exception, "unknown exception in make_behavior"});
    }
    if (!quit_ && !alive_without_messages()) quit();
    if (quit_) {
      error reason = std::move(*quit_);
      terminate(reason, consumed);
      return resume_result::done;
    }
  }
  std::size_t handled = 0;
  // Counted for metrics when the activation ends, whichever way it does.
  struct count_handled {
    const std::size_t& n;
    ~count_handled() { detail::handled_unpublished += n; }
  } counted{handled};
  std::size_t budget = throughput;
  unsigned spins = 0;
  for (;;) {
    bool drained = false;
    bool gated = false;
    for (;;) {
      if (handled >= budget) [[unlikely]] {
        // An overloaded mailbox is drained past the budget, back under the
        // soft limit: otherwise a flood of senders outgrows it forever.
        if (mailbox_size() - consumed <= soft_limit_) break;
        budget += throughput;
        // Settle what this activation has taken so far, so that the mailbox
        // length others read (senders' overload test, a held publisher,
        // send_if's bound) stops counting messages already handled. Safe:
        // more than soft_limit_ messages remain, and only we take any away.
        bool freed = false;
        settle(std::exchange(consumed, 0), freed);
      }
      // After the first message (only then: the count word is the senders'
      // line): if the mailbox count shows nothing beyond what this
      // activation took, it is drained. A ping_pong message is spared two
      // empty pops, 11 instructions; read per message, the load cost fan_in
      // a quarter of its rate before its senders sent in groups.
      if (handled == 1 && mailbox_size() == consumed) {
        drained = true;
        break;
      }
      detail::message_node* n;
      if constexpr (Gated) {
        if (gate_->open()) {
          n = pop();
        } else {
          n = pop_urgent();
          if (n == nullptr) {
            gated = true;
            break;
          }
        }
      } else {
        n = pop();
      }
      if (n == nullptr) {
        drained = true;
        break;
      }
      // Going on past the first message: an actor this activation woke
      // into the worker's next slot may wait a while, let a parked worker
      // know (a one-message activation, as in a ping-pong, wakes nobody).
      if (handled != 0) detail::announce_next();
      ++consumed;
      ++handled;
      dispatch(n);
      if (quit_) {
        error reason = std::move(*quit_);
        terminate(reason, consumed);  // may free this
        return resume_result::done;
      }
      if (yield_) {
        // We flooded someone. If this worker has nothing else to run, wait
        // here (briefly) for the receiver to catch up: backpressure without
        // a hand-over; otherwise give the worker to the others.
        if (!detail::worker_is_free() || !wait_for_receiver()) break;
      }
    }
    if (Gated && gated) {
      // Closed intake, nothing urgent: settle what was handled; with normal
      // messages left, park until the gate's owner schedules us again.
      yield_ = false;
      hold_ = false;
      overloaded_ = actor{};
      bool freed = false;
      auto left = settle(consumed, freed);
      consumed = 0;
      if (left == 0 || gate_->park()) return resume_result::done;
      continue;
    }
    // Linger: a drained actor whose worker has nothing else to do polls its
    // mailbox for a moment before going idle. A steady producer then feeds a
    // running consumer (no wake-up, no hand-over between workers), as a
    // busy-polling thread would; the worker would only have searched anyway.
    if (drained && handled != 0 && !quit_ && detail::worker_is_free()) {
      bool more = false;
      for (int i = 0; i < 64 && !more; ++i) {
        cpu_relax();
        more = mailbox_size() > consumed;
      }
      if (more) continue;
    }
    // Forget the overload notice before settling: once settled, another
    // worker may already run this actor. (A handle to the flooded receiver
    // kept past the activation could also close a reference cycle.)
    const bool yielding = std::exchange(yield_, false);
    actor flooded = std::move(overloaded_);
    bool freed = false;
    auto left = settle(consumed, freed);
    consumed = 0;
    if (left == 0) return resume_result::done;  // idle: the next sender reschedules us
    if (std::exchange(hold_, false) && yielding && flooded && detail::on_worker_thread()) {
      // A publisher that floods a subscriber is held back (the sender side of
      // backpressure, as a bounded channel does): our worker runs us again
      // once the subscriber is back under its soft limit, or after
      // tuning::hold_max_us at the latest. Still scheduled, so nobody else runs us
      // meanwhile and the handle below is ours to read. (Plain sends only
      // yield: held back, a sender resumes only when its worker looks, every
      // 16th pick or when it runs out of work, and fan_in lost 10-20% to
      // the receiver running dry meanwhile.)
      overloaded_ = std::move(flooded);
      return resume_result::held;
    }
    if (handled >= budget || yielding) return resume_result::again;
    // Announced but not yet linked: a sender is between its two steps.
    if (++spins > 128) return resume_result::again;
    cpu_relax();
  }
}

bool event_actor::held_back() const noexcept {
  return overloaded_ && overloaded_->mailbox_size() > soft_limit_ && !overloaded_->terminated();
}

bool event_actor::wait_for_receiver() noexcept {
  // About 20-50 us at most; the receiver usually drains its backlog sooner.
  for (int i = 0; i < 512; ++i) {
    if (overloaded_->mailbox_size() <= soft_limit_ || overloaded_->terminated()) {
      yield_ = false;
      overloaded_ = actor{};
      return true;
    }
    if (!detail::worker_is_free()) return false;
    for (int k = 0; k < 4; ++k) cpu_relax();
  }
  return false;
}

[[gnu::always_inline]] inline void event_actor::dispatch(detail::message_node* n) {
  if (kept_ != nullptr && kept_->awaiting != 0) [[unlikely]] {
    if (!passes_await(*n)) {
      kept_->held.push_back(n);  // after the awaited responses
      return;
    }
  }
  std::unique_ptr<detail::message_node, detail::message_deleter> guard{n};
  current_ = n;
  // Whether the actor can still live without messages changes only when its
  // behavior changes or a pending request ends (a response, a timeout: both
  // handled here before the behavior): only then is it asked again.
  const bool runtime_message = n->is_response() || n->vt->system;
  try {
    if (n->is_response()) handle_response(*n);
    else if (n->vt->system) handle_system(*n);
    else if (!bhvr_.invoke(*this, *n)) handle_unexpected(*n);
  } catch (const std::exception& e) {
    error err{errc::unhandled_exception, e.what()};
    if (n->is_request() && n->sender)
      deliver(n->sender, detail::make_message(handle(), detail::response_bit | n->id, err));
    quit_.emplace(std::move(err));
  } catch (...) {
    error err{errc::unhandled_exception, "unknown exception"};
    if (n->is_request() && n->sender)
      deliver(n->sender, detail::make_message(handle(), detail::response_bit | n->id, err));
    quit_.emplace(std::move(err));
  }
  detail::send_group_after_handler();
  current_ = nullptr;
  // Skip, await, become inside a handler and replays all create kept_: one
  // test here is all the fast path pays for them.
  if (kept_ != nullptr) [[unlikely]] {
    const bool skipped = std::exchange(n->skipped, false);
    after_handler(skipped ? guard.release() : nullptr, skipped);
  }
  if ((runtime_message || std::exchange(recheck_alive_, false)) && !quit_ && !alive_without_messages()) quit();
}

void event_actor::handle_system(detail::message_node& n) {
  if (n.holds<exit_msg>()) {
    auto& m = std::get<0>(detail::values_of<exit_msg>(n));
    if (m.source) actor_cell::unlink(*this, *m.source);
    if (hooks_ && hooks_->exit) hooks_->exit(m);
    else if (m.reason) quit(m.reason);
  } else if (n.holds<down_msg>()) {
    if (hooks_ && hooks_->down) hooks_->down(std::get<0>(detail::values_of<down_msg>(n)));
  } else if (n.holds<detail::kill_msg>()) {
    quit_.emplace(std::get<0>(detail::values_of<detail::kill_msg>(n)).reason);
  } else if (n.holds<detail::timeout_msg>()) {
    auto id = std::get<0>(detail::values_of<detail::timeout_msg>(n)).request_id;
    if (!pending_) return;
    auto it = pending_->find(id);
    if (it == pending_->end()) return;  // answered in time
    auto h = std::move(it->second);
    pending_->erase(it);
    if (h && h->awaited) --kept_->awaiting;
    error e{errc::request_timeout, "no response within the request's timeout"};
    if (h) h->fail(*this, std::move(e));
  }
}

void event_actor::handle_response(detail::message_node& n) {
  auto id = n.id & ~detail::response_bit;
  if (pending_) {
    auto it = pending_->find(id);
    if (it != pending_->end()) {
      auto h = std::move(it->second);
      pending_->erase(it);
      if (h && h->awaited) --kept_->awaiting;
      if (h) h->handle(*this, n);
      return;
    }
  }
  // Too late (timed out) or never awaited: visible, not silent.
  detail::system_access::count_dead_letter(system());
}

void event_actor::handle_unexpected(detail::message_node& n) {
  if (hooks_ && hooks_->skip_unexpected) {
    n.skipped = true;
    kept();
    return;
  }
  if (hooks_ && hooks_->fallback) {
    message m{n};
    hooks_->fallback(m);
    return;
  }
  detail::system_access::count_unexpected(system());
  if (n.is_request() && n.sender) {
    error e{errc::unexpected_message, std::string{"no handler for "} + n.vt->type_name()};
    deliver(n.sender, detail::make_message(handle(), detail::response_bit | n.id, std::move(e)));
  }
}

void event_actor::handle_request_error(error e) {
  if (hooks_ && hooks_->on_error) hooks_->on_error(e);
  else quit(std::move(e));
}

void event_actor::register_request(std::uint64_t id, std::chrono::nanoseconds timeout) {
  if (!pending_) pending_ = std::make_unique<decltype(pending_)::element_type>();
  (*pending_)[id] = nullptr;
  if (timeout != infinite)
    detail::deliver_later(system(), handle(), detail::make_message(actor{}, 0, detail::timeout_msg{id}), timeout,
                          priority::urgent);
}

response_promise event_actor::make_response_promise() {
  if (current_ == nullptr) return {};
  auto id = current_->is_request() ? current_->id : 0;
  current_->id = 0;  // the handler's own return value no longer answers it
  return response_promise{handle(), current_->sender, id};
}

}  // namespace troupe
