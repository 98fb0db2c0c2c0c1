// seq.hpp: the sequential stage, a function from In to Out applied to each
// item (one output per input); or an existing actor asked for each item.
//   troupe::seq{[](int x) { return x * 2; }}
//   troupe::seq_actor<int, std::string>{formatter}   // asks `formatter` for each item
// seq is a stream node (the same as stream::map), so it goes anywhere a
// node goes. An exception thrown by the function is a failure of its
// element (stream::options::on_error).
// seq_actor runs on a thread of its own per replica and waits for each
// answer before asking the next (order kept); put it in a farm to have
// several requests in flight. An error answer, or no answer within the
// timeout, is a failure of the element.
// Cost: seq, a call per item; seq_actor, a request and a response message
// per item plus a thread per replica.
#pragma once

#include <chrono>
#include <memory>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include "troupe/actor/blocking_actor.hpp"
#include "troupe/actor/scoped_actor.hpp"
#include "troupe/stream/node.hpp"
#include "troupe/util/exception.hpp"

namespace troupe {

template <class F, class In = stream::detail::first_arg<F>,
          class Out = std::decay_t<decltype(stream::detail::call_with(std::declval<F&>(), std::declval<In&>()))>>
class seq : public stream::map_node<F, In, Out> {
 public:
  static constexpr const char* kind = "seq";
  explicit seq(F f) : stream::map_node<F, In, Out>{std::move(f)} {}
};

template <class F>
seq(F) -> seq<F>;

/// Thrown (and handled as the element's failure) when an actor asked by a
/// seq_actor answers with an error; as a troupe::exception, its error is
/// that answer.
class stage_error : public std::runtime_error, public troupe::exception {
 public:
  explicit stage_error(troupe::error e)
      : std::runtime_error{e.to_string()}, troupe::exception{e}, error_{std::move(e)} {}
  const troupe::error& error() const noexcept { return error_; }

 private:
  troupe::error error_;
};

template <class In, class Out>
class seq_actor : public stream::node<In, Out> {
 public:
  static constexpr const char* kind = "seq_actor";
  /// Each replica of this node gets a thread of its own (it blocks on each answer).
  static constexpr bool needs_own_thread = true;

  explicit seq_actor(actor worker, std::chrono::nanoseconds timeout = infinite)
      : worker_{std::move(worker)}, timeout_{timeout} {}

  void on_start() { self_ = std::make_shared<scoped_actor>(this->system()); }
  void on_stop() { self_.reset(); }
  void consume(In& x) {
    (*self_)
        ->request(worker_, timeout_, std::move(x))
        .receive([this](Out& out) { this->send_next(std::move(out)); },
                 [](troupe::error& e) { throw stage_error{std::move(e)}; });
  }

 private:
  actor worker_;
  std::chrono::nanoseconds timeout_;
  std::shared_ptr<scoped_actor> self_;
};

}  // namespace troupe
