// layer: stream
// entry.hpp: the producer side of a graph's entry actor.
#pragma once

#include <memory>
#include <utility>

#include "troupe/detail/graph_state.hpp"
#include "troupe/detail/outlet.hpp"
#include "troupe/detail/resumable.hpp"

namespace troupe::detail {

/// Owned by the entry actor (shared by its handlers): pushes what actors
/// send into the first stage's channels; closes them when the entry ends.
template <class D>
struct entry_state {
  using element = typename D::element;

  std::shared_ptr<graph_state> graph;
  outlet_for_t<D> out;
  bool closed = false;

  entry_state(std::shared_ptr<graph_state> g, const D& first, std::size_t capacity) : graph{std::move(g)} {
    out.attach(first, capacity, nullptr);
  }
  entry_state(const entry_state&) = delete;
  ~entry_state() { close(); }

  /// false: the graph has ended (input closed, or cancelled); v was not taken.
  bool push(element&& v) {
    if (closed || graph->cancelled.load(std::memory_order_relaxed)) return false;
    out.send(std::move(v));
    out.take_sent();
    if (out.blocked()) {
      unsigned idle = 0;
      while (!out.flush()) {
        if (graph->cancelled.load(std::memory_order_acquire)) {
          out.discard();
          break;
        }
        out.sweep();
        if (help_one()) idle = 0;
        else spin_then_yield(idle);
      }
    }
    out.sweep();
    return true;
  }
  void close() noexcept {
    if (closed || !graph) return;
    closed = true;
    out.close();
  }
};

}  // namespace troupe::detail
