// kernel_round_trip, troupe: a kernel actor asked by an event actor or by the
// main thread's scoped actor, and the same add in a plain event actor.
#include "impls.hpp"

#include <troupe/opencl/opencl.hpp>
#include <troupe/troupe.hpp>

#include <memory>
#include <stdexcept>

#include "common/opencl_support.hpp"

namespace ocl = troupe::opencl;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr auto request_timeout = std::chrono::seconds{10};

/// A client's next round trips: the first one's number, and how many.
struct go_msg {
  std::int64_t first = 0;
  std::int64_t count = 0;
};

/// The event actor that asks `target` for a + b, one request at a time; a
/// go_msg is answered with the latencies (ns) of its round trips.
template <class Target>
struct client {
  troupe::event_actor* self;
  Target target;
  std::vector<float> a, b;
  std::int64_t next = 0, end = 0;
  std::vector<std::int64_t> ns = {};
  clock_type::time_point t_prev = {};
  troupe::response_promise done = {};

  void ask() {
    if (next == end) {
      done.deliver(std::move(ns));
      return;
    }
    const auto r = next;
    self->request(target, request_timeout, bench::kernel_round_trip::a_for(a, r), b)
        .then(
            [this, r](std::vector<float>& c) {
              const auto t = clock_type::now();
              ns.push_back(bench::kernel_round_trip::since_ns(t_prev, t));
              t_prev = t;
              try {
                bench::kernel_round_trip::check_answer(c, a, b, r, r + 1 == end);
              } catch (const std::exception& e) {
                done.deliver(troupe::error{troupe::errc::runtime_error, e.what()});
                return;
              }
              ++next;
              ask();
            },
            [this](troupe::error& e) { done.deliver(std::move(e)); });
  }
};

template <class Target>
troupe::actor spawn_client(troupe::actor_system& sys, Target target, std::int64_t elements) {
  return sys.spawn([target, elements](troupe::event_actor& self) {
    auto st = std::make_shared<client<Target>>(
        client<Target>{&self, target, bench::kernel_round_trip::a(elements), bench::kernel_round_trip::b(elements)});
    return troupe::behavior{[&self, st](go_msg& g) {
      st->next = g.first;
      st->end = g.first + g.count;
      st->ns.clear();
      st->ns.reserve(static_cast<std::size_t>(g.count));
      st->done = self.make_response_promise();
      st->t_prev = clock_type::now();
      st->ask();
      return st->done;
    }};
  });
}

/// The client's round trips first .. first + count - 1; their latencies.
std::vector<std::int64_t> run_client(troupe::scoped_actor& self, const troupe::actor& c, std::int64_t first,
                                     std::int64_t count) {
  std::vector<std::int64_t> ns;
  std::string failure;
  self->request(c, troupe::infinite, go_msg{first, count})
      .receive([&](std::vector<std::int64_t>& v) { ns = std::move(v); },
               [&](troupe::error& e) { failure = e.to_string(); });
  bench::check(failure.empty(), "round trips " + std::to_string(first) + ".. failed: " + failure);
  return ns;
}

template <class Target>
bench::sample run_event_client(const bench::params& p, troupe::actor_system& sys, Target target) {
  const auto round_trips = p.get("round_trips"), warmup = p.get("warmup");
  troupe::scoped_actor self{sys};
  auto c = spawn_client(sys, target, p.get("elements"));
  (void)run_client(self, c, 0, warmup);
  bench::stopwatch sw;
  auto ns = run_client(self, c, warmup, round_trips);
  bench::sample s;
  s.wall_s = sw.seconds();
  bench::check_eq("round trips", round_trips, static_cast<std::int64_t>(ns.size()));
  bench::add_latency_percentiles(s, ns);
  return s;
}

troupe::config config_of(const bench::params& p) {
  return troupe::config{.workers = static_cast<std::size_t>(p.get("workers")),
                        .polling = p.get("relaxed") != 0 ? troupe::polling::relaxed : troupe::polling::moderate};
}

auto spawn_vadd(troupe::actor_system& sys, const ocl::program& prog, std::int64_t elements) {
  return ocl::spawn(sys, prog, "vadd", ocl::nd_range{{static_cast<std::size_t>(elements)}}, ocl::in<float>{},
                    ocl::in<float>{}, ocl::out<float>{});
}

}  // namespace

bench::sample bench::run_troupe_opencl(const params& p) {
  const auto prog = ocl::program::build(opencl_support::device(), kernel_round_trip::kernel_source);
  troupe::actor_system sys{config_of(p)};
  return run_event_client(p, sys, spawn_vadd(sys, prog, p.get("elements")));
}

bench::sample bench::run_troupe_cpu_actor(const params& p) {
  troupe::actor_system sys{config_of(p)};
  auto adder = sys.spawn([](troupe::event_actor&) {
    return troupe::behavior{[](std::vector<float>& a, std::vector<float>& b) {
      for (std::size_t i = 0; i < a.size(); ++i) a[i] += b[i];
      return std::move(a);
    }};
  });
  return run_event_client(p, sys, adder);
}

bench::sample bench::run_troupe_opencl_scoped(const params& p) {
  const auto round_trips = p.get("round_trips"), warmup = p.get("warmup"), elements = p.get("elements");
  const auto prog = ocl::program::build(opencl_support::device(), kernel_round_trip::kernel_source);
  troupe::actor_system sys{config_of(p)};
  auto vadd = spawn_vadd(sys, prog, elements);
  troupe::scoped_actor self{sys};
  const auto a = kernel_round_trip::a(elements), b = kernel_round_trip::b(elements);
  std::vector<std::int64_t> ns;
  ns.reserve(static_cast<std::size_t>(round_trips));
  std::string failure;
  auto round_trip = [&](std::int64_t r, bool full) {
    std::vector<float> c;
    self->request(vadd, request_timeout, kernel_round_trip::a_for(a, r), b)
        .receive([&](std::vector<float>& got) { c = std::move(got); },
                 [&](troupe::error& e) { failure = "round trip " + std::to_string(r) + ": " + e.to_string(); });
    check(failure.empty(), failure);
    kernel_round_trip::check_answer(c, a, b, r, full);
  };
  for (std::int64_t r = 0; r < warmup; ++r) round_trip(r, false);
  stopwatch sw;
  auto t_prev = clock_type::now();
  for (std::int64_t r = warmup; r < warmup + round_trips; ++r) {
    round_trip(r, r + 1 == warmup + round_trips);
    const auto t = clock_type::now();
    ns.push_back(kernel_round_trip::since_ns(t_prev, t));
    t_prev = t;
  }
  sample s;
  s.wall_s = sw.seconds();
  add_latency_percentiles(s, ns);
  return s;
}
