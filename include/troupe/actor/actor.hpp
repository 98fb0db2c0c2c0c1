// actor.hpp: `actor`, the handle through which every actor is addressed.
// A handle is a counted reference: copying it is one atomic increment. An
// actor with no handle left and an empty mailbox can never run again and ends
// with errc::unreachable. Handles compare and hash by actor identity.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>

namespace troupe {

class actor_cell;

namespace detail {
void add_ref(actor_cell* c) noexcept;
void release(actor_cell* c) noexcept;
}  // namespace detail

class actor {
 public:
  actor() noexcept = default;
  actor(std::nullptr_t) noexcept {}
  /// Adopts (add_ref=false) or shares (add_ref=true) a reference to `c`.
  actor(actor_cell* c, bool add_ref) noexcept : cell_{c} {
    if (c != nullptr && add_ref) detail::add_ref(c);
  }
  actor(const actor& other) noexcept : actor(other.cell_, true) {}
  actor(actor&& other) noexcept : cell_{std::exchange(other.cell_, nullptr)} {}
  actor& operator=(const actor& other) noexcept {
    actor tmp{other};
    swap(tmp);
    return *this;
  }
  actor& operator=(actor&& other) noexcept {
    actor tmp{std::move(other)};
    swap(tmp);
    return *this;
  }
  ~actor() {
    if (cell_ != nullptr) detail::release(cell_);
  }

  void swap(actor& other) noexcept { std::swap(cell_, other.cell_); }
  actor_cell* get() const noexcept { return cell_; }
  actor_cell* operator->() const noexcept { return cell_; }
  actor_cell& operator*() const noexcept { return *cell_; }
  explicit operator bool() const noexcept { return cell_ != nullptr; }
  /// Gives up the reference without releasing it.
  actor_cell* detach() noexcept { return std::exchange(cell_, nullptr); }

  /// Unique for the life of the process; 0 for an empty handle.
  std::uint64_t id() const noexcept;

  friend bool operator==(const actor& a, const actor& b) noexcept { return a.cell_ == b.cell_; }
  friend bool operator<(const actor& a, const actor& b) noexcept { return std::less<actor_cell*>{}(a.cell_, b.cell_); }

 private:
  actor_cell* cell_ = nullptr;
};

}  // namespace troupe

template <>
struct std::hash<troupe::actor> {
  std::size_t operator()(const troupe::actor& a) const noexcept { return std::hash<troupe::actor_cell*>{}(a.get()); }
};
