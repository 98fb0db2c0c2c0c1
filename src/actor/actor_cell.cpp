#include "troupe/detail/actor_cell.hpp"
#include "troupe/detail/system_access.hpp"

#include <array>
#include <mutex>
#include <thread>

#include "troupe/actor/actor_system.hpp"
#include "troupe/actor/group.hpp"
#include "troupe/actor/local_actor.hpp"
#include "troupe/actor/system_messages.hpp"
#include "troupe/detail/tuning.hpp"
#include "troupe/util/cache.hpp"

namespace troupe {

namespace detail {
void add_ref(actor_cell* c) noexcept { c->add_ref(); }
void release(actor_cell* c) noexcept { c->release(); }
actor_system*& constructing_system() noexcept {
  thread_local actor_system* sys = nullptr;
  return sys;
}
}  // namespace detail

std::uint64_t actor::id() const noexcept { return cell_ != nullptr ? cell_->id() : 0; }

namespace {

// Links and monitors change rarely: a fixed table of mutexes, picked by the
// cell's address, guards them instead of a mutex in every actor.
std::mutex& stripe(const void* p) noexcept {
  static std::array<std::mutex, 64> locks;
  return locks[(reinterpret_cast<std::uintptr_t>(p) >> 6) % locks.size()];
}

}  // namespace

struct actor_cell::extras {
  std::vector<actor> monitors;
  std::vector<actor> links;
  error reason;  // valid once the cell has exited
};

actor_cell::actor_cell(actor_system& sys)
    : sys_{&sys}, word_{ref_one + mail_one}, id_{detail::system_access::next_actor_id(sys)} {
  mpsc_init(urgent_in_, urgent_out_);
  mpsc_init(normal_in_, normal_out_);
}

actor_cell::~actor_cell() { delete extras_; }

void* actor_cell::operator new(std::size_t size) { return pool_allocate(size); }
void actor_cell::operator delete(void* p, std::size_t size) noexcept { pool_deallocate(p, size); }

void actor_cell::release_n(std::uint32_t n) noexcept {
  const auto prev = word_.fetch_sub(n * ref_one, std::memory_order_acq_rel);
  TROUPE_ASSERT((prev & ref_mask) >= n, "M1: an actor handle was released more often than it was taken");
  const auto now = prev - n * ref_one;
  if ((now & ~closed_bit) == 0) last_release(now);
}

namespace detail {
namespace {
// Worker threads give back the sender references of consumed messages in
// batches: a consumer on another core would otherwise bounce each sender's
// cache line once per message. A few senders are tracked at once (fan-in
// interleaves them); flushed after every activation.
constexpr int release_slots = tuning::release_slots;
struct release_cache {
  actor_cell* cell[release_slots];
  std::uint32_t count[release_slots];
  unsigned victim;
  bool enabled;
};
thread_local release_cache releases{};
}  // namespace

void release_sender(actor_cell* c) noexcept {
  auto& rc = releases;
  if (!rc.enabled) {
    c->release();
    return;
  }
  for (int i = 0; i < release_slots; ++i)
    if (rc.cell[i] == c) {
      if (++rc.count[i] == tuning::release_batch) {
        rc.cell[i] = nullptr;
        c->release_n(std::exchange(rc.count[i], 0));
      }
      return;
    }
  auto v = rc.victim++ % release_slots;
  for (int i = 0; i < release_slots; ++i)
    if (rc.cell[i] == nullptr) {
      v = static_cast<unsigned>(i);
      break;
    }
  if (auto* old = std::exchange(rc.cell[v], c)) old->release_n(rc.count[v]);
  rc.count[v] = 1;
}

void flush_deferred() noexcept {
  auto& rc = releases;
  for (int i = 0; i < release_slots; ++i)
    if (auto* c = std::exchange(rc.cell[i], nullptr)) c->release_n(std::exchange(rc.count[i], 0));
}

void defer_on_this_thread(bool on) noexcept {
  if (!on) flush_deferred();
  releases.enabled = on;
}
}  // namespace detail

bool actor_cell::try_add_ref() noexcept {
  auto w = word_.load(std::memory_order_acquire);
  do {
    if ((w & closed_bit) != 0 || w == 0) return false;
  } while (!word_.compare_exchange_weak(w, w + ref_one, std::memory_order_acq_rel));
  return true;
}

void actor_cell::last_release(std::uint64_t word) noexcept {
  if ((word & closed_bit) != 0) {
    delete this;
    return;
  }
  // No handle and no message: the actor can never run again. Close the
  // mailbox in the same step as taking the reference that keeps the cell
  // alive through the exit protocol: between an add_ref and terminate's
  // close, try_add_ref (shutdown's kill_all, a registry lookup) could take a
  // reference and enqueue, and an enqueue into the empty, still-open mailbox
  // would schedule a cell that is freed once the protocol ends.
  const auto prev = word_.exchange(closed_bit | ref_one, std::memory_order_acq_rel);
  TROUPE_ASSERT(prev == 0, "M4: a cell with no handle and no message changed meanwhile");
  finish_exit(error{errc::unreachable, "no handle and no message left"}, prev, 0);
  release();
}

bool actor_cell::enqueue(detail::message_node* n, priority p) noexcept {
  // A chain waiting on this thread was sent before `n`: it goes first (a
  // tail call, so that the common path saves no registers).
  if (detail::tls_send_group.dest != nullptr) [[unlikely]]
    return enqueue_after_group(n, p);
  auto prev = word_.fetch_add(mail_one, std::memory_order_acq_rel);
  TROUPE_ASSERT((prev & mail_mask) != mail_mask, "M2: a mailbox holds 2^31 messages");
  if ((prev & closed_bit) != 0) [[unlikely]] {
    bounce(n);
    return false;
  }
  mpsc_push(p == priority::urgent ? urgent_in_ : normal_in_, n);
  if ((prev & mail_mask) == 0) wake();
  return true;
}

namespace detail {
thread_local constinit send_group tls_send_group{};

void flush_send_group() noexcept {
  auto& g = tls_send_group;
  auto* dest = std::exchange(g.dest, nullptr);
  if (dest == nullptr) return;
  if (g.owed != 0) g.owner->add_refs(std::exchange(g.owed, 0));
  dest->enqueue_chain(g.first, g.last, std::exchange(g.count, 0));
  dest->release();
}

void start_send_group(actor_cell* owner, actor_cell* dest, message_node* n) noexcept {
  auto& g = tls_send_group;
  flush_send_group();
  dest->add_ref();
  g.dest = dest;
  g.prev = dest;
  g.first = n;
  g.last = n;
  g.count = 1;
  g.owner = owner;
  g.owed = 1;
}
}  // namespace detail

void actor_cell::enqueue_chain(detail::message_node* first, detail::message_node* last, std::uint32_t count) noexcept {
  const auto prev = word_.fetch_add(count * mail_one, std::memory_order_acq_rel);
  TROUPE_ASSERT(((prev & mail_mask) >> 32) + count < (mail_mask >> 32), "M2: a mailbox holds 2^31 messages");
  if ((prev & closed_bit) != 0) [[unlikely]] {
    // Each message as a single send would have gone: a dead letter.
    for (auto* n = first;;) {
      auto* next = static_cast<detail::message_node*>(n->next.load(std::memory_order_relaxed));
      const bool end = n == last;
      bounce(n);
      if (end) break;
      n = next;
    }
    return;
  }
  mpsc_push_chain(normal_in_, first, last);
  if ((prev & mail_mask) == 0) wake();
}

bool actor_cell::enqueue_after_group(detail::message_node* n, priority p) noexcept {
  detail::flush_send_group();
  return enqueue(n, p);
}

// Out of line (the error and its string would make every enqueue save
// registers: ping_pong, 13 instructions per message).
void actor_cell::bounce(detail::message_node* n) noexcept {
  // The caller holds a handle, so this cannot drop the cell to zero.
  word_.fetch_sub(mail_one, std::memory_order_acq_rel);
  dead_letter(n, error{errc::actor_exited, "the receiver has ended"});
}

bool actor_cell::enqueue_if(detail::message_node* n, std::size_t limit) noexcept {
  detail::flush_send_group();  // what this thread sent before goes first
  auto w = word_.load(std::memory_order_acquire);
  do {
    if ((w & closed_bit) != 0) {
      dead_letter(n, error{errc::actor_exited, "the receiver has ended"});
      return false;
    }
    if (((w & mail_mask) >> 32) >= limit) {
      detail::destroy_message(n);
      return false;
    }
  } while (!word_.compare_exchange_weak(w, w + mail_one, std::memory_order_acq_rel));
  mpsc_push(normal_in_, n);
  if ((w & mail_mask) == 0) wake();
  return true;
}

void actor_cell::deliver_to_nobody(detail::message_node* n) noexcept {
  // No receiver at all: only the sender's system can count it.
  if (n->sender) detail::system_access::count_dead_letter(*n->sender->sys_);
  detail::destroy_message(n);
}

void actor_cell::dead_letter(detail::message_node* n, const error& why) noexcept {
  if (n->holds<detail::timeout_msg>()) {
    // The runtime's own request timer outlived its actor: no user data lost.
    detail::destroy_message(n);
    return;
  }
  detail::system_access::count_dead_letter(*sys_);
  if (n->is_request() && n->sender) {
    try {
      auto* reply = detail::make_message(actor{}, detail::response_bit | n->id, why);
      n->sender->enqueue(reply);
    } catch (...) {
      // Out of memory while answering: the requester's timeout must do.
    }
  }
  detail::destroy_message(n);
}

std::size_t actor_cell::settle(std::size_t consumed, bool& freed) noexcept {
  freed = false;
  if (consumed == 0) return (word_.load(std::memory_order_acquire) & mail_mask) >> 32;
  const auto prev = word_.fetch_sub(consumed * mail_one, std::memory_order_acq_rel);
  TROUPE_ASSERT(((prev & mail_mask) >> 32) >= consumed, "M2: more messages settled than were announced");
  const auto now = prev - consumed * mail_one;
  if (now == 0) {
    freed = true;
    last_release(0);
    return 0;
  }
  return (now & mail_mask) >> 32;
}

void actor_cell::terminate(const error& reason, std::size_t consumed) noexcept {
  auto prev = word_.fetch_or(closed_bit, std::memory_order_acq_rel);
  TROUPE_ASSERT((prev & closed_bit) == 0, "M3: an actor ended twice");
  finish_exit(reason, prev, consumed);
}

void actor_cell::finish_exit(const error& reason, std::uint64_t prev, std::size_t consumed) noexcept {
  std::uint64_t total = (prev & mail_mask) >> 32;
  TROUPE_ASSERT(total >= consumed, "M2: more messages consumed than were announced");
  // Messages announced before the close: wait for each (a producer may be
  // between its two steps) and bounce it as a dead letter.
  error gone{errc::actor_exited, "the receiver ended: " + reason.to_string()};
  unsigned spins = 0;
  for (std::uint64_t left = total - consumed; left > 0;) {
    if (auto* n = pop()) {
      dead_letter(n, gone);
      --left;
    } else {
      spin_then_yield(spins);
    }
  }
  on_exit();
  notify_exit(reason);
  detail::system_access::remove_live(*sys_, this);
  auto now = word_.fetch_sub(total * mail_one, std::memory_order_acq_rel) - total * mail_one;
  if ((now & ~closed_bit) == 0) delete this;
}

actor_cell::extras& actor_cell::ensure_extras() {
  if (extras_ == nullptr) extras_ = new extras;
  return *extras_;
}

void actor_cell::notify_exit(const error& reason) noexcept {
  std::vector<actor> monitors;
  std::vector<actor> links;
  {
    std::lock_guard<std::mutex> guard{stripe(this)};
    exited_ = true;
    exit_code_ = reason.code();
    if (extras_ != nullptr) {
      extras_->reason = reason;
      monitors.swap(extras_->monitors);
      links.swap(extras_->links);
    }
  }
  if (monitors.empty() && links.empty()) return;
  actor me{this, true};
  try {
    for (auto& m : monitors) deliver(m, detail::make_message(me, 0, down_msg{me, reason}), priority::urgent);
    for (auto& l : links) deliver(l, detail::make_message(me, 0, exit_msg{me, reason}), priority::urgent);
  } catch (...) {
    // Out of memory: nothing sensible is left to do for the watchers.
  }
}

void actor_cell::add_monitor(const actor& watcher) {
  error reason;
  {
    std::lock_guard<std::mutex> guard{stripe(this)};
    if (!exited_) {
      ensure_extras().monitors.push_back(watcher);
      return;
    }
    reason = extras_ != nullptr ? extras_->reason : error{exit_code_, "had already ended"};
  }
  actor me{this, true};
  deliver(watcher, detail::make_message(me, 0, down_msg{me, reason}), priority::urgent);
}

void actor_cell::remove_monitor(const actor& watcher) {
  std::lock_guard<std::mutex> guard{stripe(this)};
  if (extras_ == nullptr) return;
  auto& v = extras_->monitors;
  for (auto it = v.begin(); it != v.end(); ++it)
    if (*it == watcher) {
      v.erase(it);
      return;
    }
}

void actor_cell::link(actor_cell& a, actor_cell& b) {
  // Each side records the other; a side that has already ended tells the
  // other one at once.
  auto attach = [](actor_cell& self, actor_cell& other) {
    error reason;
    {
      std::lock_guard<std::mutex> guard{stripe(&self)};
      if (!self.exited_) {
        auto& v = self.ensure_extras().links;
        for (auto& l : v)
          if (l.get() == &other) return;
        v.push_back(other.handle());
        return;
      }
      reason = self.extras_ != nullptr ? self.extras_->reason : error{self.exit_code_, "had already ended"};
    }
    actor me{&self, true};
    deliver(other.handle(), detail::make_message(me, 0, exit_msg{me, reason}), priority::urgent);
  };
  attach(a, b);
  attach(b, a);
}

void actor_cell::unlink(actor_cell& a, actor_cell& b) {
  auto detach = [](actor_cell& self, actor_cell& other) {
    std::lock_guard<std::mutex> guard{stripe(&self)};
    if (self.extras_ == nullptr) return;
    auto& v = self.extras_->links;
    for (auto it = v.begin(); it != v.end(); ++it)
      if (it->get() == &other) {
        v.erase(it);
        return;
      }
  };
  detach(a, b);
  detach(b, a);
}

// ------------------------------------------------------------ local_actor

namespace {
actor_system& system_under_construction() {
  auto* sys = detail::constructing_system();
  if (sys == nullptr) throw std::logic_error("troupe: actors are created by actor_system::spawn, not directly");
  return *sys;
}
}  // namespace

local_actor::local_actor() : actor_cell{system_under_construction()}, soft_limit_{sys_->mailbox_soft_limit()} {}

local_actor::~local_actor() { (void)self_.detach(); }

void local_actor::link_to(const actor& other) {
  if (other) actor_cell::link(*this, *other);
}
void local_actor::unlink_from(const actor& other) {
  if (other) actor_cell::unlink(*this, *other);
}
void local_actor::monitor(const actor& other) {
  if (other) other->add_monitor(handle());
}
void local_actor::demonitor(const actor& other) {
  if (other) other->remove_monitor(handle());
}

void detail::deliver_exit(actor source, const actor& dest, error reason) {
  if (reason.code() == errc::kill) {
    actor_cell::deliver(dest, make_message(std::move(source), 0, kill_msg{std::move(reason)}), priority::urgent);
    return;
  }
  exit_msg m{source, std::move(reason)};
  actor_cell::deliver(dest, make_message(std::move(source), 0, std::move(m)), priority::urgent);
}

void local_actor::send_exit(const actor& dest, error reason) {
  detail::deliver_exit(handle(), dest, std::move(reason));
}

void local_actor::join(const group& g) {
  if (!g) return;
  g.subscribe(handle());
  groups_.push_back(g.state());
}
void local_actor::leave(const group& g) {
  if (!g) return;
  g.unsubscribe(handle());
  std::erase(groups_, g.state());
}
void local_actor::on_exit() noexcept {
  yield_ = false;
  hold_ = false;
  overloaded_ = actor{};
  auto me = handle();
  for (auto& s : groups_) group{s}.unsubscribe(me);
  groups_.clear();
}

// ------------------------------------------------------------------ group

void group::subscribe(const actor& a) const {
  std::lock_guard<std::mutex> guard{state_->mtx};
  for (auto& s : *state_->subscribers)
    if (s == a) return;
  auto next = std::make_shared<std::vector<actor>>(*state_->subscribers);
  next->push_back(a);
  state_->subscribers = std::move(next);
}

void group::unsubscribe(const actor& a) const {
  std::lock_guard<std::mutex> guard{state_->mtx};
  auto next = std::make_shared<std::vector<actor>>(*state_->subscribers);
  std::erase(*next, a);
  state_->subscribers = std::move(next);
}

group group_manager::get(const std::string& name) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto& s = groups_[name];
  if (!s) s = std::make_shared<detail::group_state>(name);
  return group{s};
}

void group_manager::clear() {
  std::unordered_map<std::string, std::shared_ptr<detail::group_state>> old;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    old.swap(groups_);
  }
}

}  // namespace troupe
