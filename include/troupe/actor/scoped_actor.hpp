// scoped_actor.hpp: a blocking actor owned by the current thread (main,
// tests, adapters between threads and actors):
//   troupe::scoped_actor self{sys};
//   self->request(a, 1s, get_atom{}).receive([](int v) {...}, [](troupe::error& e) {...});
// It ends when the scoped_actor goes out of scope; it must not outlive the
// system. Use it where a thread that is not an actor needs to talk to actors;
// inside actors, use the actor's own `self`.
// Cost: one blocking_actor (a mailbox and a semaphore); no thread of its own.
#pragma once

#include "troupe/actor/actor_system.hpp"
#include "troupe/actor/blocking_actor.hpp"

namespace troupe {

class scoped_actor {
 public:
  explicit scoped_actor(actor_system& sys);
  ~scoped_actor();
  scoped_actor(const scoped_actor&) = delete;
  scoped_actor& operator=(const scoped_actor&) = delete;

  blocking_actor* operator->() const noexcept { return self_; }
  blocking_actor& operator*() const noexcept { return *self_; }
  actor handle() const noexcept { return self_->handle(); }

 private:
  blocking_actor* self_;
};

}  // namespace troupe
