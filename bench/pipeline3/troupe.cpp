// pipeline3, troupe: the typed streaming layer (`troupe`, `troupe_threads`)
// and event actors (`troupe_actors`, the actor baseline).
#include "impls.hpp"

#include <troupe/troupe.hpp>

#include "run_stream.hpp"

namespace {
struct go_atom {};
using bench::pipeline3::tuple;
}  // namespace

bench::sample bench::run_troupe_actors(const params& p) {
  const auto tuples = p.get("tuples");
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  troupe::scoped_actor self{sys};
  auto sink = sys.spawn(
      [tuples](troupe::event_actor& s, troupe::actor main) {
        return troupe::behavior{[&s, main, tuples, t = pipeline3::tally{}](tuple& x) mutable {
          t.add(x);
          if (t.count == tuples) {
            s.send(main, t.count, t.sum, t.out_of_order);
            s.quit();
          }
        }};
      },
      self.handle());
  auto forwarder =
      sys.spawn([](troupe::event_actor& s,
                   troupe::actor next) { return troupe::behavior{[&s, next](tuple& x) { s.send(next, x); }}; },
                sink);
  auto source = sys.spawn(
      [tuples](troupe::event_actor& s, troupe::actor next) {
        return troupe::behavior{[&s, next, tuples, i = std::int64_t{0}](go_atom) mutable {
          for (int k = 0; k < 1000 && i < tuples; ++k, ++i) s.send(next, tuple{i % 1024, i, i});
          if (i < tuples) s.send(s.self(), go_atom{});
          else s.quit();
        }};
      },
      forwarder);
  stopwatch sw;
  self->send(source, go_atom{});
  pipeline3::tally t;
  self->receive([&](std::int64_t c, std::int64_t sum, std::int64_t bad) {
    t.count = c;
    t.sum = sum;
    t.out_of_order = bad;
  });
  sample s;
  s.wall_s = sw.seconds();
  t.check(tuples);
  return s;
}

namespace {
// The typed streaming version: a source node, a forwarding node and a sink
// node connected by two channels of 1024 slots.
using bench::stream_tuple::forwarder;
using bench::stream_tuple::sink;
using bench::stream_tuple::source;

auto three_stages(source& src, sink& snk) { return troupe::pipeline{src, forwarder{}, snk}; }
}  // namespace

bench::sample bench::run_troupe(const params& p) { return pipeline3::run_stream(p, three_stages); }
bench::sample bench::run_troupe_threads(const params& p) {
  return pipeline3::run_stream(p, three_stages, troupe::placement::own_thread());
}
