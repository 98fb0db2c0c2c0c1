#include "troupe/actor/blocking_actor.hpp"
#include "troupe/detail/system_access.hpp"

#include <thread>

#include "troupe/actor/actor_system.hpp"
#include "troupe/util/cache.hpp"

namespace troupe {

blocking_actor::blocking_actor() {
  own_thread_ = true;
  soft_limit_ = SIZE_MAX;  // no activations to yield from: overload control does not apply
  sem_ = std::make_unique<detail::semaphore>(0);
  drop_spawn_token();
}

blocking_actor::~blocking_actor() {
  for (auto* n : stash_) detail::destroy_message(n);
}

void blocking_actor::wake() noexcept { sem_->release(); }

detail::message_node* blocking_actor::next_from_mailbox(std::optional<clock::time_point> deadline) {
  unsigned spins = 0;
  for (;;) {
    if (auto* n = pop()) {
      ++consumed_;
      detail::system_access::note_activity(system());
      return n;
    }
    bool freed = false;
    auto left = settle(consumed_, freed);  // never frees: our owner holds a handle
    consumed_ = 0;
    if (left > 0) {  // a sender is between its two steps
      spin_then_yield(spins);
      continue;
    }
    waiting_.store(true, std::memory_order_release);
    bool woken = true;
    if (deadline) woken = sem_->try_acquire_until(*deadline);
    else sem_->acquire();
    waiting_.store(false, std::memory_order_release);
    if (!woken) {
      if (auto* n = pop()) {
        ++consumed_;
        return n;
      }
      return nullptr;
    }
  }
}

bool blocking_actor::handle_system(detail::message_node& n) {
  if (n.holds<exit_msg>()) {
    auto& m = std::get<0>(detail::values_of<exit_msg>(n));
    if (m.source) actor_cell::unlink(*this, *m.source);
    if (exit_handler_) exit_handler_(m);
    else if (m.reason) throw actor_exited{m.reason};
  } else if (n.holds<down_msg>()) {
    if (!down_handler_) return false;  // for a receive that takes it
    down_handler_(std::get<0>(detail::values_of<down_msg>(n)));
  } else if (n.holds<detail::kill_msg>()) {
    throw actor_exited{std::get<0>(detail::values_of<detail::kill_msg>(n)).reason};
  }
  return true;
}

void blocking_actor::keep(detail::message_node* n) {
  if (n->is_response() && !awaited_.contains(n->id & ~detail::response_bit)) {
    // Too late (its request timed out) or never awaited: visible at once.
    detail::destroy_message(n);
    detail::system_access::count_dead_letter(system());
    return;
  }
  stash_.push_back(n);
}

void blocking_actor::forget_request(std::uint64_t id) noexcept {
  awaited_.erase(id);
  const auto wanted = detail::response_bit | id;
  for (auto it = stash_.begin(); it != stash_.end(); ++it)
    if ((*it)->id == wanted) {
      detail::destroy_message(*it);
      stash_.erase(it);
      detail::system_access::count_dead_letter(system());
      return;
    }
}

bool blocking_actor::receive_impl(behavior& b, std::optional<clock::time_point> deadline) {
  // A receive inside a handler waits, maybe for the answer to a message of
  // the handler's send group: what waits goes first.
  detail::flush_send_group();
  // Handles `n`; if its handler returned troupe::skip, gives `n` back to
  // keep for a later receive (else nullptr).
  auto dispatch = [&](detail::message_node* n) -> detail::message_node* {
    std::unique_ptr<detail::message_node, detail::message_deleter> guard{n};
    current_ = n;
    struct reset {
      detail::message_node*& c;
      ~reset() {
        detail::send_group_after_handler();
        c = nullptr;
      }
    } r{current_};
    try {
      b.invoke(*this, *n);
    } catch (const std::exception& e) {
      if (n->is_request() && n->sender)
        deliver(n->sender, detail::make_message(handle(), detail::response_bit | n->id,
                                                error{errc::unhandled_exception, e.what()}));
      throw;
    }
    if (!n->skipped) return nullptr;
    n->skipped = false;
    return guard.release();
  };
  for (std::size_t i = 0; i < stash_.size(); ++i) {
    auto* n = stash_[i];
    if (n->is_response() || !b.accepts(*n)) continue;
    stash_.erase(stash_.begin() + static_cast<std::ptrdiff_t>(i));
    if (dispatch(n) == nullptr) return true;
    stash_.insert(stash_.begin() + static_cast<std::ptrdiff_t>(i), n);  // skipped: back in its place
  }
  for (;;) {
    auto* n = next_from_mailbox(deadline);
    if (n == nullptr) return false;
    if (!n->is_response() && b.accepts(*n)) {  // handlers may take down_msg / exit_msg too
      if (dispatch(n) == nullptr) return true;
      stash_.push_back(n);  // skipped
      continue;
    }
    if (n->vt->system && system_message(n)) continue;
    keep(n);  // for a later receive
  }
}

detail::message_node* blocking_actor::await_response(std::uint64_t id, std::optional<clock::time_point> deadline) {
  const auto wanted = detail::response_bit | id;
  // Whatever happens (answer, timeout, exception), nobody awaits it after this.
  struct forget {
    std::unordered_set<std::uint64_t>& awaited;
    std::uint64_t id;
    ~forget() { awaited.erase(id); }
  } done{awaited_, id};
  for (auto it = stash_.begin(); it != stash_.end(); ++it)
    if ((*it)->id == wanted) {
      auto* n = *it;
      stash_.erase(it);
      return n;
    }
  for (;;) {
    auto* n = next_from_mailbox(deadline);
    if (n == nullptr) return nullptr;
    if (n->id == wanted) return n;
    if (n->vt->system && system_message(n)) continue;
    keep(n);
  }
}

bool blocking_actor::system_message(detail::message_node* n) {
  bool done = false;
  try {
    done = handle_system(*n);
  } catch (...) {
    detail::destroy_message(n);
    throw;
  }
  if (done) detail::destroy_message(n);  // else kept: the caller stashes it
  return done;
}

void blocking_actor::finish(const error& reason) noexcept {
  if (finished_) return;
  finished_ = true;
  error gone{errc::actor_exited, "the receiver ended: " + reason.to_string()};
  for (auto* n : stash_) dead_letter(n, gone);
  stash_.clear();
  terminate(reason, consumed_);
  consumed_ = 0;
}

}  // namespace troupe
