// group.hpp: named topics for 1:N publish/subscribe.
//   auto g = sys.groups().get("prices");
//   self.join(g);             // inside a subscriber
//   self.send(g, tick{...});  // every subscriber gets its own copy
// Publications carry no sender (sender() is empty in the subscriber). A
// subscriber over its mailbox's soft limit holds an event-actor publisher
// back (its worker runs it again once that subscriber has drained, or after
// 1 ms at the latest): publications cannot outrun subscribers.
// Subscribers leave automatically when they end. Publishing takes a
// snapshot of the subscriber list (one shared_ptr copy under a mutex) and
// enqueues one copy per subscriber: values must be copyable.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "troupe/actor/local_actor.hpp"

namespace troupe {

namespace detail {
struct group_state {
  explicit group_state(std::string n) : name{std::move(n)}, subscribers{std::make_shared<std::vector<actor>>()} {}
  std::string name;
  mutable std::mutex mtx;
  std::shared_ptr<const std::vector<actor>> subscribers;  // copy-on-write
};
}  // namespace detail

class group {
 public:
  group() = default;
  explicit group(std::shared_ptr<detail::group_state> s) : state_{std::move(s)} {}

  explicit operator bool() const noexcept { return static_cast<bool>(state_); }
  const std::string& name() const { return state_->name; }
  std::shared_ptr<const std::vector<actor>> subscribers() const {
    std::lock_guard<std::mutex> guard{state_->mtx};
    return state_->subscribers;
  }
  std::size_t subscriber_count() const { return subscribers()->size(); }

  /// Adds `a` (no effect if already subscribed).
  void subscribe(const actor& a) const;
  void unsubscribe(const actor& a) const;

  const std::shared_ptr<detail::group_state>& state() const noexcept { return state_; }

  friend bool operator==(const group& a, const group& b) noexcept { return a.state_ == b.state_; }

 private:
  std::shared_ptr<detail::group_state> state_;
};

class group_manager {
 public:
  /// The group with this name, created on first use.
  group get(const std::string& name);
  /// Drops every group (at system shutdown).
  void clear();

 private:
  std::mutex mtx_;
  std::unordered_map<std::string, std::shared_ptr<detail::group_state>> groups_;
};

template <class... Ts>
void local_actor::send(const group& g, Ts&&... xs) {
  static_assert((std::is_copy_constructible_v<std::decay_t<Ts>> && ...),
                "values published to a group must be copyable: each subscriber gets a copy");
  auto subs = g.subscribers();
  // A subscriber over its soft limit holds the publisher back until it has
  // drained (event_actor::resume). Publications are anonymous (no sender):
  // a sender handle in every copy would make all subscribers count
  // references on the publisher's cache line. Put the publisher into the
  // message if replies are wanted.
  for (auto& s : *subs) {
    deliver(s, detail::make_message(actor{}, 0, xs...));
    note_load(s, true);
  }
}

}  // namespace troupe
