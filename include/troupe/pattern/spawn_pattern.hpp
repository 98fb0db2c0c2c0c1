// spawn_pattern.hpp: a pattern, spawned as one stream graph on one engine.
//   // closed: from a source to a sink
//   auto g = troupe::spawn_pattern(sys, troupe::pipeline{source, troupe::farm{work{}, 4}, sink});
//   g.wait();
//   // open at the front: actors send it items (a sink at the end)
//   auto in = troupe::spawn_pattern(sys, troupe::pipeline{troupe::farm{work{}, 4}, sink});
//   sys.send(in, item);  ...  in.close();
//   // open at both ends: a macro actor that answers
//   auto p = troupe::spawn_pattern(sys, troupe::pipeline{troupe::farm{troupe::seq{f}, 4}, troupe::seq{g}});
//   self.request(p, 1s, item).then([](result r) { ... });   // the item's first result answers
//   sys.send(p, item);   // its results go to the sender (or to options.results_to)
// The handle is a stream::graph; it converts to its entry actor, which any
// actor can send to, request from, monitor or link to. A request is
// answered with its item's first result, with the item's error (see
// options.on_error), or with an error if the item produced no result. The
// graph lives until its input ends (end_of_stream, close(), or the last
// handle to its entry gone) and every element has gone through.
// A pattern that starts with a source and whose last stage emits has nowhere
// to put its results: that does not compile (end it with a sink, e.g.
// stream::to_actor(a)).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "troupe/actor/actor_system.hpp"
#include "troupe/actor/event_actor.hpp"
#include "troupe/detail/build.hpp"
#include "troupe/detail/entry.hpp"
#include "troupe/pattern/branches.hpp"
#include "troupe/pattern/farm.hpp"
#include "troupe/pattern/pipeline.hpp"
#include "troupe/pattern/placed.hpp"
#include "troupe/pattern/stage.hpp"
#include "troupe/stream/graph.hpp"
#include "troupe/util/affinity.hpp"

namespace troupe {

namespace detail {

template <class P>
inline constexpr bool has_exit = !stage<P> || !std::is_void_v<in_type_of<P>> || std::is_void_v<out_type_of<P>>;

/// The diagnostics of spawn_pattern (see stage.hpp).
template <class P>
struct spawn_check {
  static_assert(stage<P>,
                "troupe::spawn_pattern: the pattern is neither a stream node nor a pattern "
                "(pipeline, farm, branches, placed, seq, stream::map, ...)");
  static_assert(has_exit<P>,
                "troupe::spawn_pattern: the pattern starts with a source and its last stage emits values "
                "that nothing receives: end it with a sink (stream::sink, stream::to_actor(a))");
};

inline void check_options(const stream::options& o) {
  if (o.capacity == 0) throw std::invalid_argument("stream options: capacity must be at least 1");
  if (o.batch == 0) throw std::invalid_argument("stream options: batch must be at least 1");
}

/// The builder of a graph, with its options' settings.
inline builder make_builder(graph_state& g) {
  const auto& o = g.opts;
  builder b{g, o.capacity, g.sys->worker_count(), {}, 0, nullptr, {}, 0};
  b.settings.batch = o.batch;
  b.settings.latency_sample = o.latency_sample;
  b.settings.on_error = o.on_error;
  if (o.placement.own_thread_each()) {
    b.settings.dedicated = true;
    b.settings.cores = affinity::parse_for_machine(o.placement.cores());
  }
  if (!o.placement.rank_list().empty()) b.ranks = o.placement.rank_list();
  return b;
}

/// Why an entry takes no more input.
inline error ended(const graph_state& g) {
  if (auto e = g.error_value()) return e;
  return error{errc::actor_exited, "the stream graph's input has ended"};
}

/// The entry actor: pushes each item into the first stage; in a graph that
/// answers, tags it with where its results go.
template <class In, bool Answers, class First>
actor spawn_entry(actor_system& sys, const std::shared_ptr<graph_state>& st, const First& first) {
  auto es = std::make_shared<entry_state<First>>(st, first, st->opts.capacity);
  // The behavior alone owns the entry state: when the entry ends (even while
  // something still holds its handle), its behavior goes and the graph's
  // input closes.
  return sys.spawn([es](event_actor& self) mutable {
    auto state = std::move(es);
    return behavior{[state, &self](In& v) {
                      if constexpr (Answers) {
                        reply_to to;
                        if (self.current_is_request()) to = reply_to{self.make_response_promise()};
                        else if (state->graph->opts.results_to) to = reply_to{state->graph->opts.results_to};
                        else if (self.sender()) to = reply_to{self.sender()};
                        tagged<In> t{std::move(v), std::move(to), no_seq, true};
                        if (state->push(std::move(t))) return;
                        const error why = ended(*state->graph);
                        t.reply.fail(why);  // NOLINT(bugprone-use-after-move): a refused push leaves t as it was
                        self.quit(why);
                      } else {
                        if (state->push(std::move(v))) return;
                        count_dead_letter(self.system());
                        self.quit(ended(*state->graph));
                      }
                    },
                    [state, &self](stream::end_of_stream) {
                      state->close();
                      self.quit();
                    }};
  });
}

/// The element types of description P (element_types_of).
template <class P>
struct element_types {
  template <class F>
  static void each(F& f) {
    if constexpr (!std::is_void_v<typename P::in_type>) f.template operator()<typename P::in_type>();
    if constexpr (!std::is_void_v<typename P::out_type>) f.template operator()<typename P::out_type>();
  }
};
template <class... Ss>
struct element_types<pipeline<Ss...>> {
  template <class F>
  static void each(F& f) {
    (element_types<Ss>::each(f), ...);
  }
};
template <class... Ps>
struct element_types<branches<Ps...>> {
  template <class F>
  static void each(F& f) {
    (element_types<Ps>::each(f), ...);
  }
};
template <class P, class Policy, bool Ordered>
struct element_types<farm<P, Policy, Ordered>> : element_types<P> {};
template <class P>
struct element_types<placed<P>> : element_types<P> {};

}  // namespace detail

/// Spawns `pattern` as a stream graph on `sys` (see the top of this header).
template <class P>
stream::graph spawn_pattern(actor_system& sys, const P& pattern, stream::options opts = {}) {
  static_assert(sizeof(detail::spawn_check<P>) > 0);  // the diagnostics
  constexpr bool ok = stage<P> && detail::has_exit<P> && detail::well_formed<P>::value;
  if constexpr (!ok) {
    return {};
  } else {
    using In = typename P::in_type;
    using Out = typename P::out_type;
    constexpr bool answers = !std::is_void_v<In> && !std::is_void_v<Out>;
    namespace d = detail;
    detail::check_options(opts);
    if (!std::is_void_v<In> && !opts.checkpoint.dir.empty())
      throw std::invalid_argument{
          "stream options: checkpoints need a graph that starts with a source (a replayable one); this one is fed by "
          "an entry actor"};
    auto st = std::make_shared<d::graph_state>(sys, std::move(opts));
    auto& o = st->opts;
    auto b = d::make_builder(*st);
    actor entry;
    if constexpr (answers) {
      auto last = d::build_stage<false>(b, d::reply_sink<Out>{o.results_to}, d::no_downstream{});
      auto first = d::build_stage<true>(b, pattern, last);
      entry = d::spawn_entry<In, true>(sys, st, first);
    } else if constexpr (!std::is_void_v<In>) {
      auto first = d::build_stage<false>(b, pattern, d::no_downstream{});
      entry = d::spawn_entry<In, false>(sys, st, first);
    } else {
      d::build_stage<false>(b, pattern, d::no_downstream{});
    }
    st->launch(st);
    return stream::graph{std::move(st), std::move(entry)};
  }
}

namespace ext {

/// Calls f.template operator()<T>() for the input and output type T of each
/// node in description P (not void; a type may come more than once): the
/// element types that may cross between processes when P is split.
template <class P, class F>
void for_each_element_type(F&& f) {
  detail::element_types<P>::each(f);
}

/// Spawns this process's part of `pattern`, a graph from sources to sinks
/// split across the processes of `where` (detail/edge.hpp): the runners of
/// this rank, and the edges to and from the others. Every process calls it
/// with the same description, `name` and `cfg`. It publishes this rank's
/// inlets, then finds the other ranks' (blocking up to the peers' connect
/// timeout; the exception names what was missing), then starts. The graph
/// handle works as spawn_pattern's: wait, error, done, cancel, metrics (of
/// this rank's part). Throws std::invalid_argument for a placement that
/// names a rank outside `where`.
template <class P>
stream::graph spawn_split(actor_system& sys, const P& pattern, peers& where, std::string name, edge_config cfg,
                          stream::options opts = {}) {
  static_assert(sizeof(detail::spawn_check<P>) > 0);  // the diagnostics
  static_assert(!stage<P> || (std::is_void_v<detail::in_type_of<P>> && std::is_void_v<detail::out_type_of<P>>),
                "troupe: a graph split across processes must run from sources to sinks");
  constexpr bool ok = stage<P> && detail::well_formed<P>::value && std::is_void_v<detail::in_type_of<P>> &&
                      std::is_void_v<detail::out_type_of<P>>;
  if constexpr (!ok) {
    return {};
  } else {
    namespace d = detail;
    d::check_options(opts);
    if (cfg.batch == 0 || (cfg.window != 0 && cfg.window < cfg.batch) || (cfg.window == 0 && cfg.window_bytes == 0))
      throw std::invalid_argument(
          "troupe: the edges of a split graph need 0 < batch <= window, or a window in bytes (batch " +
          std::to_string(cfg.batch) + ", window " + std::to_string(cfg.window) + ", window_bytes " +
          std::to_string(cfg.window_bytes) + ")");
    auto st = std::make_shared<d::graph_state>(sys, std::move(opts));
    st->peers = &where;
    st->name = name;
    auto b = d::make_builder(*st);
    d::split_plan plan;
    plan.peers = &where;
    plan.name = std::move(name);
    plan.cfg = cfg;
    b.split = &plan;
    for_each_element_type<P>([&plan]<class T>() {
      d::install_edges<T>(plan);
      d::install_edges<d::tagged<T>>(plan);  // ordered farms
    });
    d::build_stage<false>(b, pattern, d::no_downstream{});
    for (auto& slot : plan.slots)
      if (slot.rank >= where.size())
        throw std::invalid_argument("troupe: a split graph places a replica on rank " + std::to_string(slot.rank) +
                                    ", but there are " + std::to_string(where.size()) + " ranks");
    d::settle_split(plan, *st);
    d::drop_idle_senders(plan, *st);
    for (auto& [consumer, r] : plan.receivers) r->publish_inlet();
    for (auto* s : plan.senders) s->resolve();
    st->launch(st);
    return stream::graph{std::move(st), actor{}};
  }
}

}  // namespace ext

}  // namespace troupe
