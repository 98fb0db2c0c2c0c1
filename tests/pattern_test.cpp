// Fork/join tasks, divide & conquer, map.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <span>
#include <stdexcept>
#include <vector>

#include "troupe/troupe.hpp"

using namespace std::chrono_literals;

namespace {

std::uint64_t fib_seq(int n) { return n < 2 ? static_cast<std::uint64_t>(n) : fib_seq(n - 1) + fib_seq(n - 2); }

auto fib_spec(int cutoff) {
  return troupe::dac{.is_base = [](const int& n) { return n < 2; },
                     .solve = [](int n) { return static_cast<std::uint64_t>(n); },
                     .divide = [](int n) { return std::vector<int>{n - 1, n - 2}; },
                     .combine = [](int, std::vector<std::uint64_t> r) { return r[0] + r[1]; },
                     .sequential = [cutoff](const int& n) { return n < cutoff; }};
}

using range = std::span<int>;

// Merge sort in place over spans: the problem is a span, the result too.
auto sort_spec(std::size_t cutoff) {
  return troupe::dac{.is_base = [](const range& r) { return r.size() <= 1; },
                     .solve = [](range r) { return r; },
                     .divide =
                         [](range r) {
                           auto mid = r.size() / 2;
                           return std::vector<range>{r.subspan(0, mid), r.subspan(mid)};
                         },
                     .combine =
                         [](range r, std::vector<range> parts) {
                           std::inplace_merge(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(parts[0].size()),
                                              r.end());
                           return r;
                         },
                     .sequential = [cutoff](const range& r) { return r.size() < cutoff; }};
}

std::vector<int> random_ints(std::size_t n, unsigned seed) {
  std::mt19937 rng{seed};
  std::vector<int> v(n);
  for (auto& x : v) x = static_cast<int>(rng());
  return v;
}

}  // namespace

TEST(task_group, runs_every_task_and_waits) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  std::vector<int> hits(1000, 0);
  {
    troupe::task_group g{sys};
    for (int i = 0; i < 1000; ++i) g.run([&hits, i] { hits[i] += 1; });
    g.wait();
  }
  EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), 1000);
}

TEST(task_group, rethrows_the_first_exception_and_finishes_the_others) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  std::atomic<int> done{0};
  troupe::task_group g{sys};
  for (int i = 0; i < 100; ++i)
    g.run([&done, i] {
      if (i == 50) throw std::runtime_error("task 50");
      ++done;
    });
  EXPECT_THROW(g.wait(), std::runtime_error);
  EXPECT_EQ(done.load(), 99);
  g.run([&done] { ++done; });  // usable again
  g.wait();
  EXPECT_EQ(done.load(), 100);
}

TEST(divide_and_conquer, fibonacci_matches_the_sequential_result) {
  for (std::size_t workers : {1u, 2u}) {
    troupe::actor_system sys{troupe::config{.workers = workers}};
    EXPECT_EQ(troupe::divide_and_conquer(sys, 27, fib_spec(15)), fib_seq(27));
    EXPECT_EQ(troupe::divide_and_conquer(sys, 20, fib_spec(0)), fib_seq(20));  // no cut-off: a task per node
  }
}

TEST(divide_and_conquer, merge_sort_sorts_like_std_sort) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto v = random_ints(200'000, 7);
  auto expected = v;
  std::sort(expected.begin(), expected.end());
  troupe::divide_and_conquer(sys, range{v}, sort_spec(4096));
  EXPECT_EQ(v, expected);
}

TEST(divide_and_conquer, runs_inside_an_actor_whose_worker_helps) {
  troupe::actor_system sys{troupe::config{.workers = 1}};  // one worker: the actor's own
  auto a = sys.spawn([&sys](troupe::event_actor&) {
    return troupe::behavior{[&sys](int n) { return troupe::divide_and_conquer(sys, n, fib_spec(10)); }};
  });
  troupe::scoped_actor self{sys};
  std::uint64_t got = 0;
  self->request(a, 30s, 22)
      .receive([&](std::uint64_t v) { got = v; }, [](troupe::error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(got, fib_seq(22));
}

TEST(divide_and_conquer, exception_in_a_piece_reaches_the_caller) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto spec = troupe::dac{.is_base = [](const int& n) { return n < 2; },
                          .solve = [](int n) -> int {
                            if (n == 1) throw std::invalid_argument("leaf 1");
                            return n;
                          },
                          .divide = [](int n) { return std::vector<int>{n - 1, n - 2}; },
                          .combine = [](int, std::vector<int> r) { return r[0] + r[1]; }};
  EXPECT_THROW(troupe::divide_and_conquer(sys, 12, spec), std::invalid_argument);
}

TEST(map, static_and_dynamic_partitions_equal_the_sequential_map) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto in = random_ints(100'003, 3);
  std::vector<long> expected(in.size());
  std::transform(in.begin(), in.end(), expected.begin(), [](int x) { return static_cast<long>(x) * 3 + 1; });
  auto f = [](int x) { return static_cast<long>(x) * 3 + 1; };
  EXPECT_EQ(troupe::map(sys, in, f, troupe::partition::fixed()), expected);
  EXPECT_EQ(troupe::map(sys, in, f, troupe::partition::dynamic(1)), expected);
  EXPECT_EQ(troupe::map(sys, in, f, troupe::partition::dynamic(1000)), expected);
  EXPECT_TRUE(troupe::map(sys, std::vector<int>{}, f).empty());
}

TEST(map, exception_reaches_the_caller) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  std::vector<int> in(10'000, 1);
  in[7777] = -1;
  auto f = [](int x) {
    if (x < 0) throw std::domain_error("negative");
    return x;
  };
  EXPECT_THROW(troupe::map(sys, in, f, troupe::partition::dynamic(16)), std::domain_error);
  EXPECT_THROW(troupe::map(sys, in, f, troupe::partition::fixed()), std::domain_error);
}

TEST(map, many_actors_use_map_concurrently) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  constexpr int actors = 20;
  for (int a = 0; a < actors; ++a)
    sys.spawn([&sys, me, a](troupe::event_actor& s) {
      std::vector<int> data(5000);
      std::iota(data.begin(), data.end(), a);
      auto out = troupe::map(sys, data, [](int x) { return static_cast<long>(x) * 2; });
      long sum = std::accumulate(out.begin(), out.end(), 0L);
      s.send(me, a, sum);
    });
  for (int i = 0; i < actors; ++i)
    self->receive([](int a, long sum) {
      long expected = 0;
      for (int x = a; x < a + 5000; ++x) expected += 2L * x;
      EXPECT_EQ(sum, expected) << "actor " << a;
    });
}

TEST(map_accelerator, hundred_actors_request_concurrently_and_each_gets_its_own_answer) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto acc = troupe::spawn_map_accelerator<int, long>(sys, {.workers = 2});
  troupe::scoped_actor self{sys};
  auto me = self.handle();
  constexpr int actors = 100;
  for (int a = 0; a < actors; ++a)
    sys.spawn([acc, me, a](troupe::event_actor& s) {
      std::vector<int> data(1000 + a);
      std::iota(data.begin(), data.end(), a * 10);
      std::function<long(const int&)> f = [a](const int& x) { return static_cast<long>(x) * (a + 1); };
      s.request(acc, 30s, std::move(f), std::move(data))
          .then(
              [&s, me, a](std::vector<long>& out) {
                bool ok = out.size() == static_cast<std::size_t>(1000 + a);
                for (std::size_t i = 0; ok && i < out.size(); ++i)
                  ok = out[i] == (static_cast<long>(a) * 10 + static_cast<long>(i)) * (a + 1);
                s.send(me, a, ok);
              },
              [&s, me, a](troupe::error&) { s.send(me, a, false); });
    });
  std::vector<int> seen(actors, 0);
  for (int i = 0; i < actors; ++i)
    self->receive([&](int a, bool ok) {
      EXPECT_TRUE(ok) << "actor " << a;
      ++seen[static_cast<std::size_t>(a)];
    });
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), actors);
}

TEST(map_accelerator, exception_in_the_function_is_an_error_reply) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  auto acc = troupe::spawn_map_accelerator<int, int>(sys, {.workers = 1});
  troupe::scoped_actor self{sys};
  std::function<int(const int&)> f = [](const int& x) -> int {
    if (x == 3) throw std::runtime_error("three");
    return x;
  };
  troupe::error got;
  self->request(acc, 10s, std::move(f), std::vector<int>{1, 2, 3, 4})
      .receive([](std::vector<int>&) { ADD_FAILURE(); }, [&](troupe::error& e) { got = e; });
  EXPECT_EQ(got.code(), troupe::errc::runtime_error);
  EXPECT_NE(got.message().find("three"), std::string::npos);
}

TEST(map_accelerator, team_threads_run_on_their_own_cores) {
  auto cores = troupe::available_cores();
  auto team_core = cores.back();
  troupe::actor_system sys{troupe::config{.workers = 1, .worker_affinity = "<" + std::to_string(cores.front()) + ">"}};
  auto acc = troupe::spawn_map_accelerator<int, int>(
      sys, {.workers = 2,
            .placement = troupe::placement::own_thread("<" + std::to_string(team_core) + ">"),
            .part = troupe::partition::dynamic(1)});
  troupe::scoped_actor self{sys};
  std::function<int(const int&)> where = [](const int&) { return sched_getcpu(); };
  std::vector<int> cpus;
  self->request(acc, 10s, std::move(where), std::vector<int>(64, 0))
      .receive([&](std::vector<int>& out) { cpus = out; }, [](troupe::error& e) { FAIL() << e.to_string(); });
  ASSERT_EQ(cpus.size(), 64u);
  for (int c : cpus) EXPECT_EQ(c, team_core);
}

TEST(map_accelerator, on_the_pool_it_maps_on_the_callers_workers) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto acc = troupe::spawn_map_accelerator<int, int>(sys, {.placement = troupe::placement::pool()});
  troupe::scoped_actor self{sys};
  std::function<int(const int&)> twice = [](const int& x) { return 2 * x; };
  std::vector<int> out;
  self->request(acc, 10s, std::move(twice), std::vector<int>{1, 2, 3})
      .receive([&](std::vector<int>& v) { out = v; }, [](troupe::error& e) { FAIL() << e.to_string(); });
  EXPECT_EQ(out, (std::vector<int>{2, 4, 6}));
}

TEST(map_accelerator, bad_affinity_is_rejected_at_spawn) {
  troupe::actor_system sys{troupe::config{.workers = 1}};
  EXPECT_THROW(
      (troupe::spawn_map_accelerator<int, int>(sys, {.workers = 1, .placement = troupe::placement::own_thread("<0-")})),
      troupe::config_error);
}

TEST(task_group, posted_tasks_run_before_the_system_shuts_down) {
  std::atomic<int> ran{0};
  {
    troupe::actor_system sys{troupe::config{.workers = 2}};
    for (int i = 0; i < 1000; ++i) troupe::post(sys, [&ran] { ++ran; });
  }
  EXPECT_EQ(ran.load(), 1000);
}
