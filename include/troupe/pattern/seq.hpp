// seq.hpp: the sequential stage: a function or a class with operator(),
// from In to Out, run by one actor; or an existing actor that answers
// requests of In with Out (seq_actor).
//   troupe::seq{[](int x) { return x * 2; }}
//   troupe::seq_actor<int, std::string>{formatter}   // asks `formatter` for each item
// Exceptions thrown by the function reach the requester as errors; the
// stage keeps running.
#pragma once

#include "troupe/actor/behavior.hpp"
#include "troupe/pattern/stage.hpp"

namespace troupe {

template <class F, class In = std::decay_t<std::tuple_element_t<0, typename detail::callable_traits<F>::args>>,
          class Out = detail::stage_result<F, In>>
class seq {
 public:
  using in_type = In;
  using out_type = Out;

  explicit seq(F f) : f_{std::move(f)} {}

  detail::router<In> build(actor_system& sys, detail::router<Out> next, std::vector<actor>& spawned) const {
    auto a = sys.spawn([f = f_, next](event_actor&) mutable {
      return behavior{[f, next](detail::envelope<In>& e) mutable {
        ++e.hops;
        if (!e.value) {
          next.send(std::move(e).template with<Out>(std::nullopt));
          return;
        }
        std::optional<Out> out;
        try {
          out.emplace(f(std::move(*e.value)));
        } catch (const std::exception& ex) {
          next.send(detail::failed<In, Out>(std::move(e), ex.what()));
          return;
        } catch (...) {
          next.send(detail::failed<In, Out>(std::move(e), "unknown exception"));
          return;
        }
        next.send(std::move(e).template with<Out>(std::move(out)));
      }};
    });
    spawned.push_back(a);
    return detail::actor_router<In>(a);
  }

 private:
  F f_;
};

template <class F>
seq(F) -> seq<F>;

/// A stage backed by an actor you already have: each item is sent to it as a
/// request, and its answer (of type Out) moves on. Items are requested
/// concurrently; use an ordered farm around it if order matters. An error
/// answer reaches the item's requester.
template <class In, class Out>
class seq_actor {
 public:
  using in_type = In;
  using out_type = Out;

  explicit seq_actor(actor worker) : worker_{std::move(worker)} {}

  detail::router<In> build(actor_system& sys, detail::router<Out> next, std::vector<actor>& spawned) const {
    auto a = sys.spawn([worker = worker_, next](event_actor& self) {
      return behavior{[&self, worker, next](detail::envelope<In>& e) {
        ++e.hops;
        if (!e.value) {
          next.send(std::move(e).template with<Out>(std::nullopt));
          return;
        }
        auto item = std::move(*e.value);
        auto rest = std::make_shared<detail::envelope<In>>(std::move(e));
        self.request(worker, infinite, std::move(item))
            .then(
                [next, rest](Out& out) { next.send(std::move(*rest).template with<Out>(std::move(out))); },
                [next, rest](error& err) {
                  next.send(detail::failed<In, Out>(std::move(*rest), err.to_string().c_str()));
                });
      }};
    });
    spawned.push_back(a);
    return detail::actor_router<In>(a);
  }

 private:
  actor worker_;
};

}  // namespace troupe
