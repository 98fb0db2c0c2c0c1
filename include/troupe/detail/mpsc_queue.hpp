// layer: util
// mpsc_queue.hpp: intrusive, lock-free, unbounded multi-producer single-consumer
// FIFO (D. Vyukov's node-based design).
// Use it where many threads hand nodes to one consumer (actor mailboxes).
// Don't use it with several consumers, or where a bound is needed: it has none.
// Cost: push is one atomic exchange and one store, never a loop, never a lock
// (a chain of nodes the producer linked itself: the same for all of them);
// pop is plain loads and stores. A push preempted between its two steps hides
// the nodes behind it until it resumes: pop() then returns nullptr although the
// queue is not empty (the caller decides whether to spin or come back later).
#pragma once

#include <atomic>

namespace troupe {

/// Base of every node that can sit in an mpsc_queue.
struct mpsc_node {
  std::atomic<mpsc_node*> next{nullptr};
};

/// The two ends of the queue, so that a user can put them on different cache
/// lines (producers write the head, the consumer the tail).
struct mpsc_head {
  std::atomic<mpsc_node*> head;
};
struct mpsc_tail {
  mpsc_node* tail;
  mpsc_node stub;
};

inline void mpsc_init(mpsc_head& h, mpsc_tail& t) noexcept {
  h.head.store(&t.stub, std::memory_order_relaxed);
  t.tail = &t.stub;
}

/// Any thread: pushes the nodes first..last, already linked through `next`
/// by the caller, in one step (one exchange for all of them).
inline void mpsc_push_chain(mpsc_head& h, mpsc_node* first, mpsc_node* last) noexcept {
  last->next.store(nullptr, std::memory_order_relaxed);
  mpsc_node* prev = h.head.exchange(last, std::memory_order_acq_rel);
  prev->next.store(first, std::memory_order_release);
}

/// Any thread. Never blocks, never fails.
inline void mpsc_push(mpsc_head& h, mpsc_node* n) noexcept { mpsc_push_chain(h, n, n); }

/// Consumer only. nullptr when empty or when a producer is mid-push.
inline mpsc_node* mpsc_pop(mpsc_head& h, mpsc_tail& t) noexcept {
  mpsc_node* tail = t.tail;
  mpsc_node* next = tail->next.load(std::memory_order_acquire);
  if (tail == &t.stub) {
    if (next == nullptr) return nullptr;
    t.tail = next;
    tail = next;
    next = next->next.load(std::memory_order_acquire);
  }
  if (next != nullptr) {
    t.tail = next;
    // The next node was written by another core: start fetching it while
    // the caller handles this one (a linked queue's dependent loads would
    // otherwise pay one cache miss per message, in sequence).
    __builtin_prefetch(next);
    return tail;
  }
  if (tail != h.head.load(std::memory_order_acquire)) return nullptr;
  mpsc_push(h, &t.stub);
  next = tail->next.load(std::memory_order_acquire);
  if (next != nullptr) {
    t.tail = next;
    return tail;
  }
  return nullptr;
}

/// Both ends together (24 bytes, unpadded).
class mpsc_queue {
 public:
  mpsc_queue() noexcept { mpsc_init(head_, tail_); }
  mpsc_queue(const mpsc_queue&) = delete;
  mpsc_queue& operator=(const mpsc_queue&) = delete;

  void push(mpsc_node* n) noexcept { mpsc_push(head_, n); }
  mpsc_node* pop() noexcept { return mpsc_pop(head_, tail_); }

 private:
  mpsc_head head_;
  mpsc_tail tail_;
};

}  // namespace troupe
