// graph.cpp: the non-template parts of stream graphs: running, waking,
// finishing and measuring runners.
#include "troupe/stream/graph.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "../runtime/scheduler.hpp"
#include "../runtime/timer.hpp"
#include "troupe/actor/actor_system.hpp"
#include "troupe/detail/assert.hpp"
#include "troupe/detail/runner.hpp"
#include "troupe/detail/system_access.hpp"
#include "troupe/detail/text.hpp"
#include "troupe/detail/tuning.hpp"
#include "troupe/detail/waker.hpp"
#include "troupe/util/json.hpp"

namespace troupe::stream {

// ------------------------------------------------------------- metrics

void latency_histogram::merge(const latency_histogram& other) noexcept {
  for (int i = 0; i < buckets; ++i) {
    auto v = other.counts_[i].load(std::memory_order_relaxed);
    if (v != 0) counts_[i].store(counts_[i].load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  }
}

std::uint64_t latency_histogram::count() const noexcept {
  std::uint64_t n = 0;
  for (auto& c : counts_) n += c.load(std::memory_order_relaxed);
  return n;
}

std::uint64_t latency_histogram::percentile(double q) const noexcept {
  const auto n = count();
  if (n == 0) return 0;
  q = q < 0 ? 0 : (q > 1 ? 1 : q);
  // The rank of the wanted value, 1-based: the first value for q = 0, the last for q = 1.
  auto rank = static_cast<std::uint64_t>(q * static_cast<double>(n - 1)) + 1;
  std::uint64_t seen = 0;
  for (int i = 0; i < buckets; ++i) {
    seen += counts_[i].load(std::memory_order_relaxed);
    if (seen >= rank) return lower_bound(i);
  }
  return lower_bound(buckets - 1);
}

double latency_histogram::approximate_sum() const noexcept {
  // Each value counts as the middle of its bucket (values below 2^sub_bits
  // have a bucket each: exact); the last bucket has no upper end.
  double sum = 0;
  for (int i = 0; i < buckets; ++i) {
    const auto n = counts_[i].load(std::memory_order_relaxed);
    if (n == 0) continue;
    const auto lo = static_cast<double>(lower_bound(i));
    const double hi = i + 1 < buckets ? static_cast<double>(lower_bound(i + 1)) - 1 : lo;
    sum += static_cast<double>(n) * (lo + hi) / 2;
  }
  return sum;
}

std::string graph_metrics::to_json() const {
  json_writer w;
  w.object([&] {
    w.field("elapsed_s", elapsed_s).field("split", split).field("rank", rank);
    w.array("nodes", [&] {
      for (auto& n : nodes)
        w.object([&] {
          w.field("name", n.name).field("replica", n.replica).field("rank", n.rank).field("dedicated", n.dedicated);
          w.field("items_in", n.items_in).field("stage", n.stage).field("items_out", n.items_out);
          w.field("failed", n.failed).field("queued", n.queued).field("capacity", n.capacity);
          w.field("blocked_s", static_cast<double>(n.blocked_ns) * 1e-9).field("late", n.late);
        });
    });
    w.object("latency_ns", [&] {
      w.field("count", latency.count());
      const std::pair<const char*, double> qs[] = {{"min", 0},    {"p5", 0.05},  {"p25", 0.25}, {"p50", 0.5},
                                                   {"p75", 0.75}, {"p95", 0.95}, {"p99", 0.99}, {"max", 1}};
      for (auto& [name, q] : qs) w.field(name, latency.percentile(q));
    });
  });
  return w.take();
}

}  // namespace troupe::stream

namespace troupe::detail {

[[noreturn]] void assertion_failed(const char* what, const char* condition, const char* file, int line) noexcept {
  std::fprintf(stderr, "troupe: invariant broken: %s\n  (%s) is false at %s:%d\n", what, condition, file, line);
  std::abort();
}

void count_dead_letter(actor_system& sys) noexcept { system_access::count_dead_letter(sys); }

std::string demangle(const char* mangled) {
  int status = 0;
  char* s = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status != 0 || s == nullptr) return mangled;
  std::string out{s};
  std::free(s);
  return out;
}

// ------------------------------------------------------------- runner_base

resume_result runner_base::resume(std::size_t) {
  switch (step(settings_.batch)) {
    case step_result::more:
    case step_result::blocked:
      return resume_result::again;
    case step_result::idle:
    case step_result::finished:
      break;
  }
  return resume_result::done;
}

void runner_base::run_on_thread() {
  if (!settings_.cores.empty()) pin_current_thread(settings_.cores.for_thread(settings_.thread_index));
  unsigned spins = 0;
  for (;;) {
    switch (step(settings_.batch)) {
      case step_result::finished:
        return;
      case step_result::idle:
        // Sleep until launch() (the futex word changes after `active_` is set).
        for (;;) {
          const auto seen = wakeups_.load(std::memory_order_seq_cst);
          if (active_.load(std::memory_order_seq_cst)) break;
          wakeups_.wait(seen, std::memory_order_seq_cst);
        }
        spins = 0;
        break;
      case step_result::blocked:
        spin_then_yield(spins);
        break;
      case step_result::more:
        spins = 0;
        break;
    }
  }
}

void runner_base::start() noexcept {
  active_.store(true, std::memory_order_relaxed);
  if (!settings_.dedicated) system_access::schedule(*graph_->sys, this);
}

void runner_base::launch() noexcept {
  if (settings_.dedicated) {
    wakeups_.fetch_add(1, std::memory_order_seq_cst);
    wakeups_.notify_one();
  } else {
    system_access::schedule(*graph_->sys, this);
    // The waker is a runner in mid-batch (or an entry actor mid-message):
    // the woken runner may wait behind it, so let a parked worker take it.
    announce_next();
  }
}

bool runner_base::linger(bool for_room) noexcept {
  // Waiting a little is cheaper than sleeping and being woken (a futex call
  // on each side, or a trip through the scheduler's queues) when input comes
  // back within microseconds, as it does in a busy graph. Dedicated threads
  // spin, then yield, for up to ~50 us before they sleep; pooled runners spin
  // 256 times at most, and only while their worker has nothing else to run.
  constexpr auto limit = std::chrono::nanoseconds{tuning::linger_ns};
  std::chrono::steady_clock::time_point until{};
  for (unsigned i = 0;; ++i) {
    if (!settings_.dedicated && (i & 31) == 0 && (i >= tuning::linger_spins || !worker_is_free())) return false;
    if (for_room ? room_ready() : has_input()) return true;
    if (for_room && cancelled()) return true;
    if (settings_.dedicated && (i & 31) == 31) {
      const auto now = std::chrono::steady_clock::now();
      if (until == std::chrono::steady_clock::time_point{}) until = now + limit;
      else if (now >= until) return false;
      if (i >= tuning::linger_spins) std::this_thread::yield();
    }
    cpu_relax();
  }
}

namespace {
// Wakes a paced source; holds its graph while pending.
class wake_task final : public timer_task {
 public:
  wake_task(std::shared_ptr<graph_state> g, runner_base* r) : g_{std::move(g)}, r_{r} {}
  void fire() noexcept override { r_->wake(); }
  void discard() noexcept override {}

 private:
  std::shared_ptr<graph_state> g_;
  runner_base* r_;
};
}  // namespace

void runner_base::wake_at(std::uint64_t t) noexcept {
  std::shared_ptr<graph_state> keep;
  {
    std::lock_guard<std::mutex> guard{graph_->mtx};
    keep = graph_->self;
  }
  const auto now = stream::now();
  const auto when = std::chrono::steady_clock::now() + std::chrono::nanoseconds{t > now ? t - now : 0};
  try {
    system_access::add_timer(*graph_->sys, when, std::make_unique<wake_task>(std::move(keep), this));
  } catch (...) {
    wake();  // no timer (out of memory, or the system is stopping): come back at once
  }
}

void runner_base::enter_release() noexcept { graph_->releasing.fetch_add(1, std::memory_order_relaxed); }
// The last touch of the graph by a runner that may have gone idle.
void runner_base::leave_release() noexcept { graph_->releasing.fetch_sub(1, std::memory_order_release); }

bool runner_base::may_poll() const noexcept { return !settings_.dedicated && worker_is_free(); }

bool runner_base::cancelled() const noexcept { return graph_->cancelled.load(std::memory_order_acquire); }

actor_system& runner_base::system() const noexcept { return *graph_->sys; }

error runner_base::describe(std::exception_ptr e) const {
  std::string what;
  try {
    std::rethrow_exception(std::move(e));
  } catch (const std::exception& ex) {
    what = ex.what();
  } catch (...) {
    what = "an exception not derived from std::exception";
  }
  return error{errc::unhandled_exception,
               "stream node '" + name_ + "' (replica " + std::to_string(settings_.replica) + ") failed: " + what};
}

void runner_base::fail(std::exception_ptr e) noexcept {
  error err;
  try {
    err = describe(e);
  } catch (...) {
    err = error{errc::unhandled_exception};
  }
  graph_->fail(std::move(e), std::move(err));
}

void runner_base::fail(std::exception_ptr e, error err) noexcept { graph_->fail(std::move(e), std::move(err)); }

error runner_base::skip(std::exception_ptr e) noexcept {
  failed_.store(failed_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  graph_->failed.fetch_add(1, std::memory_order_relaxed);
  try {
    error err = describe(std::move(e));
    if (auto& to = graph_->opts.errors_to)
      actor_cell::deliver(to, make_message(actor{}, 0, stream::element_failed{name_, settings_.replica, err}));
    return err;
  } catch (...) {
    return error{errc::unhandled_exception};
  }
}

void runner_base::finished() noexcept { graph_->runner_finished(); }

void runner_base::count_blocked(std::uint64_t since) noexcept {
  const auto now = stream::now();
  if (now > since)
    blocked_ns_.store(blocked_ns_.load(std::memory_order_relaxed) + (now - since), std::memory_order_relaxed);
  blocked_since_.store(0, std::memory_order_relaxed);
}

stream::node_metrics runner_base::metrics() const {
  stream::node_metrics m;
  m.name = name_;
  m.replica = settings_.replica;
  m.rank = settings_.rank;
  m.stage = settings_.stage;
  m.dedicated = settings_.dedicated;
  m.items_in = items_in();
  m.items_out = emitted_.shown.load(std::memory_order_relaxed);
  m.failed = failed_.load(std::memory_order_relaxed);
  m.queued = queued();
  m.capacity = capacity();
  m.late = late();
  m.blocked_ns = blocked_ns_.load(std::memory_order_relaxed);
  if (const auto since = blocked_since_.load(std::memory_order_relaxed); since != 0) {
    const auto now = stream::now();
    if (now > since) m.blocked_ns += now - since;  // still waiting
  }
  return m;
}

// ------------------------------------------------------------- graph_state

graph_state::~graph_state() {
  // A runner that went idle just before the graph finished may still be
  // looking at its channels (a few instructions).
  while (releasing.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  for (auto& t : threads) {
    if (!t.joinable()) continue;
    if (t.get_id() == std::this_thread::get_id()) t.detach();
    else t.join();
  }
}

void graph_state::launch(std::shared_ptr<graph_state> me) {
  started = std::chrono::steady_clock::now();
  remaining.store(runners.size(), std::memory_order_relaxed);
  if (runners.empty()) {
    done.store(1, std::memory_order_release);
    return;
  }
  // Checkpoints: before anything runs, every node takes its state from the
  // last completed checkpoint (a directory it cannot use throws from here).
  if (!opts.checkpoint.dir.empty()) {
    checkpoints = std::make_unique<checkpointer>(*this, opts.checkpoint, peers, name);
    checkpoints->restore();
  }
  self = std::move(me);
  // Which runners watermarks can reach (channel.hpp): those fed by a
  // generator, directly or through other runners. Built back to front, the
  // runners are listed consumers first: taken in reverse, producers come
  // first and one pass settles it (a second one checks).
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = runners.rbegin(); it != runners.rend(); ++it) changed = (*it)->resolve_event_time() || changed;
  }
  // A system that is shutting down takes no new graph: it ends at once.
  registered = system_access::register_client(*sys, this);
  if (!registered) cancelled.store(true, std::memory_order_release);
  std::vector<runner_base*> dedicated;
  for (auto& r : runners) {
    if (r->dedicated()) dedicated.push_back(r.get());
  }
  try {
    std::lock_guard<std::mutex> guard{mtx};
    for (auto* r : dedicated) {
      r->start();
      threads.emplace_back([r] { r->run_on_thread(); });
    }
  } catch (...) {
    // Could not start a thread: the runners already started end at once.
    cancelled.store(true, std::memory_order_release);
    if (registered) system_access::unregister_client(*sys, this);
    registered = false;
    throw;
  }
  for (auto& r : runners)
    if (!r->dedicated()) r->start();
  if (checkpoints) checkpoints->start();
}

void graph_state::fail(std::exception_ptr e, troupe::error err) noexcept {
  {
    std::lock_guard<std::mutex> guard{mtx};
    if (!exception) {
      exception = std::move(e);
      error = std::move(err);
    }
  }
  cancel();
}

troupe::error graph_state::error_value() const {
  std::lock_guard<std::mutex> guard{mtx};
  return error;
}

void graph_state::cancel() noexcept {
  if (cancelled.exchange(true, std::memory_order_acq_rel)) return;
  if (done.load(std::memory_order_acquire) != 0) return;
  // Every runner that is still running holds `self`; wake them so they see it.
  std::shared_ptr<graph_state> keep;
  {
    std::lock_guard<std::mutex> guard{mtx};
    keep = self;
  }
  if (!keep) return;
  for (auto& r : runners) r->wake();
}

void graph_state::runner_finished() noexcept {
  if (remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::shared_ptr<graph_state> keep;
  {
    std::lock_guard<std::mutex> guard{mtx};
    keep = std::move(self);
  }
  // The checkpointer's thread ends; after a clean end the job is done and
  // its checkpoints go.
  if (checkpoints) checkpoints->stop(!cancelled.load(std::memory_order_acquire));
  stream::completed report;
  report.error = error_value();
  report.failed = failed.load(std::memory_order_relaxed);
  if (!opts.metrics_json.empty()) {
    std::ofstream f{opts.metrics_json};
    f << metrics().to_json() << '\n';
    if (!f) std::fprintf(stderr, "troupe stream: cannot write metrics to %s\n", opts.metrics_json.c_str());
  }
  done.store(1, std::memory_order_release);
  done.notify_all();
  if (opts.notify) actor_cell::deliver(opts.notify, make_message(actor{}, 0, std::move(report)));
  if (registered) system_access::unregister_client(*sys, this);
  // `keep` may be the last reference: the graph (and the calling runner) go now.
}

stream::graph_metrics graph_state::metrics() const {
  stream::graph_metrics m;
  // A consistent cut (channel.hpp, C9): every runner's items in first, then
  // the rest, so that no consumer shows more taken than its producers show
  // emitted.
  std::vector<std::uint64_t> in(runners.size());
  for (std::size_t i = 0; i < runners.size(); ++i) in[i] = runners[i]->items_in();
  // Built back to front: list them front to back.
  // A stage's replicas are listed together, replica 0 first.
  std::size_t stage = 0;
  for (auto it = runners.rbegin(); it != runners.rend(); ++it) {
    m.nodes.push_back((*it)->metrics());
    auto& n = m.nodes.back();
    n.items_in = in[static_cast<std::size_t>(runners.rend() - it) - 1];
    if (!staged) {
      if (n.replica == 0 && m.nodes.size() > 1) ++stage;
      n.stage = stage;
    }
    (*it)->add_latency(m.latency);
  }
  // A graph split across processes numbered its stages over every process
  // (edge.hpp): this one's runners and edges, in stage order.
  if (staged)
    std::stable_sort(m.nodes.begin(), m.nodes.end(),
                     [](const stream::node_metrics& a, const stream::node_metrics& b) { return a.stage < b.stage; });
  m.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  m.split = staged;
  m.rank = rank;
  return m;
}

void graph_state::wait_done() const {
  if (on_worker_thread()) {
    unsigned idle = 0;
    while (done.load(std::memory_order_acquire) == 0) {
      if (help_one()) idle = 0;
      else spin_then_yield(idle);
    }
    return;
  }
  while (done.load(std::memory_order_acquire) == 0) done.wait(0, std::memory_order_acquire);
}

bool graph_state::wait_done_for(std::chrono::nanoseconds d) const {
  const auto deadline = std::chrono::steady_clock::now() + d;
  unsigned idle = 0;
  while (done.load(std::memory_order_acquire) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (on_worker_thread() && help_one()) idle = 0;
    else if (idle < 64) spin_then_yield(idle);
    else std::this_thread::sleep_for(std::chrono::microseconds{200});
  }
  return true;
}

}  // namespace troupe::detail

namespace troupe::stream {
void wake_handle::wake() const noexcept {
  if (w_) w_->notify();
}

void graph::close() const {
  if (entry_) st_->sys->send(entry_, end_of_stream{});
}
}  // namespace troupe::stream
