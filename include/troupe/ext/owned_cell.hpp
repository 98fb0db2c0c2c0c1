// layer: actor (ext: the seam for optional modules)
// owned_cell.hpp: an actor that no worker runs. Its owner (a stream runner,
// a network I/O thread) takes the messages from its mailbox itself; the
// sender that finds the mailbox empty calls notify(), and the owner must
// then drain it again. Monitors, links and exits work as for any actor.
//   class inbox final : public troupe::ext::owned_cell {
//     using owned_cell::owned_cell;
//     void notify() noexcept override { owner_wake(); }   // any thread
//   };
//   auto* cell = new inbox{sys};        // the handle owns it:
//   troupe::actor a = cell->adopt();    // publish `a`, send it mail
//   cell->drain([](troupe::message& m) { ... });   // owner, after a notify
//   cell->end(troupe::error{});         // owner: monitors see it go
// An owner that forwards messages without handling them (a network proxy)
// takes them one by one and says how many it took:
//   std::size_t n = 0;
//   while (auto m = cell->take()) { ++n; forward(std::move(m)); }  // ext::mail
//   if (cell->settle_taken(n) != 0) { /* more came meanwhile: take again */ }
// A table that finds cells without owning them (by key) gets a handle with
// try_handle(), which is empty once the cell has ended or is being freed;
// on_end() (any thread, once) tells the subclass that it ended.
// Ordering: a notify() comes after the message that caused it is visible to
// take(); an owner that drains until the mailbox settles at zero misses
// nothing (the next message notifies again).
// Cost: as an actor's mailbox (one fetch_add and one exchange per message).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <utility>

#include "troupe/actor/actor.hpp"
#include "troupe/actor/message.hpp"
#include "troupe/detail/actor_cell.hpp"
#include "troupe/ext/messages.hpp"

namespace troupe::ext {

class owned_cell : public actor_cell {
 public:
  /// The mail a take() returns (owning; destroys the message).
  using mail = ext::mail;

  explicit owned_cell(actor_system& sys) : actor_cell{sys} { drop_spawn_token(); }

  /// The first handle: the cell lives as long as handles or mail keep it.
  actor adopt() noexcept { return actor{this, false}; }
  /// Any thread: a handle, or an empty one once the cell has ended or is
  /// being freed (for tables that find cells without owning them).
  [[nodiscard]] actor try_handle() noexcept { return try_add_ref() ? actor{this, false} : actor{}; }

  /// Owner: the next message (urgent first), or null when none is visible.
  mail take() noexcept { return mail{pop()}; }
  /// Owner: `n` messages taken are done; returns how many are still queued.
  /// At 0 the mailbox is idle: the next message calls notify().
  std::size_t settle_taken(std::size_t n) noexcept {
    bool freed = false;
    return settle(n, freed);
  }
  /// Owner: calls f(message&) for every message, until the mailbox settles
  /// at zero (or `ended()`); returns how many it handled.
  template <class F>
  std::size_t drain(F&& f) {
    std::size_t all = 0;
    while (!ended_.load(std::memory_order_relaxed)) {
      std::size_t taken = 0;
      while (auto m = take()) {
        ++taken;
        message view = m.view();
        f(view);
      }
      all += taken;
      if (taken == 0 || settle_taken(taken) == 0) break;
    }
    return all;
  }
  /// Owner: ends the actor with `why` (error{}: normally); what is queued is
  /// dropped as dead letters. The cell may be freed by then: keep a handle
  /// while touching it afterwards.
  void end(const error& why) noexcept {
    if (ended_.load(std::memory_order_relaxed)) return;
    ended_.store(true, std::memory_order_release);
    terminate(why, 0);
  }
  /// Any thread (a runner's release check reads it while its owner may end it).
  bool ended() const noexcept { return ended_.load(std::memory_order_acquire); }

 protected:
  /// Any thread: mail came to an empty mailbox.
  virtual void notify() noexcept = 0;
  /// Any thread, once: the cell ended (end(), or no handle and no mail was
  /// left); monitors and links are told right after. Must not throw.
  virtual void on_end() noexcept {}

 private:
  detail::resume_result resume(std::size_t) override { return detail::resume_result::done; }
  void wake() noexcept final { notify(); }
  void on_exit() noexcept final { on_end(); }
  std::atomic<bool> ended_{false};
};

}  // namespace troupe::ext
