// mpsc_queue.hpp: intrusive, lock-free, unbounded multi-producer single-consumer
// FIFO (D. Vyukov's node-based design).
// Use it where many threads hand nodes to one consumer (actor mailboxes).
// Don't use it with several consumers, or where a bound is needed: it has none.
// Cost: push is one atomic exchange and one store, never a loop, never a lock;
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

class mpsc_queue {
 public:
  mpsc_queue() noexcept : head_{&stub_}, tail_{&stub_} {}
  mpsc_queue(const mpsc_queue&) = delete;
  mpsc_queue& operator=(const mpsc_queue&) = delete;

  /// Any thread. Never blocks, never fails.
  void push(mpsc_node* n) noexcept {
    n->next.store(nullptr, std::memory_order_relaxed);
    mpsc_node* prev = head_.exchange(n, std::memory_order_acq_rel);
    prev->next.store(n, std::memory_order_release);
  }

  /// Consumer only. nullptr when empty or when a producer is mid-push.
  mpsc_node* pop() noexcept {
    mpsc_node* tail = tail_;
    mpsc_node* next = tail->next.load(std::memory_order_acquire);
    if (tail == &stub_) {
      if (next == nullptr) return nullptr;
      tail_ = next;
      tail = next;
      next = next->next.load(std::memory_order_acquire);
    }
    if (next != nullptr) {
      tail_ = next;
      // The next node was written by another core: start fetching it while
      // the caller handles this one (a linked queue's dependent loads would
      // otherwise pay one cache miss per message, in sequence).
      __builtin_prefetch(next);
      return tail;
    }
    if (tail != head_.load(std::memory_order_acquire)) return nullptr;
    push(&stub_);
    next = tail->next.load(std::memory_order_acquire);
    if (next != nullptr) {
      tail_ = next;
      return tail;
    }
    return nullptr;
  }

  /// Consumer only; a hint (a producer may be mid-push).
  bool empty() const noexcept {
    return tail_ == &stub_ && stub_.next.load(std::memory_order_acquire) == nullptr &&
           head_.load(std::memory_order_acquire) == &stub_;
  }

 private:
  // Deliberately unpadded (24 bytes): a mailbox holds two of these and a
  // million actors must fit in memory; producers and the consumer share the
  // mailbox's counter line anyway. Pad around the queue where that matters.
  std::atomic<mpsc_node*> head_;  // producers
  mpsc_node* tail_;               // consumer
  mpsc_node stub_;
};

}  // namespace troupe
