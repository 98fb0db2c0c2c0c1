#include "troupe/actor/actor_system.hpp"
#include "troupe/actor/scoped_actor.hpp"
#include "troupe/detail/system_access.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../runtime/scheduler.hpp"
#include "../runtime/timer.hpp"
#include "troupe/util/affinity.hpp"

namespace troupe {

namespace {
constexpr std::size_t live_shards = detail::tuning::live_shards;

struct alignas(cache_line) live_shard {
  std::mutex mtx;
  actor_cell* head = nullptr;
};
}  // namespace

struct actor_system::impl {
  explicit impl(config c)
      : cfg{validated(std::move(c))},
        worker_aff{affinity::parse_for_machine(cfg.worker_affinity)},
        detached_aff{affinity::parse_for_machine(cfg.detached_affinity)},
        blocking_aff{affinity::parse_for_machine(cfg.blocking_affinity)},
        sched{cfg.effective_workers(), cfg.polling, cfg.throughput, worker_aff} {}
  static config validated(config c) {
    c.validate();
    return c;
  }

  config cfg;
  affinity worker_aff;
  affinity detached_aff;
  affinity blocking_aff;
  detail::scheduler sched;
  detail::timer timers;
  actor_registry registry;
  group_manager groups;

  alignas(cache_line) std::atomic<std::uint64_t> dead_letters{0};
  alignas(cache_line) std::atomic<std::uint64_t> unexpected{0};
  std::atomic<std::uint64_t> failed_tasks{0};
  alignas(cache_line) std::atomic<std::uint64_t> next_id{0};
  alignas(cache_line) std::atomic<std::size_t> live{0};
  alignas(cache_line) std::atomic<std::uint64_t> own_thread_activity{0};
  std::atomic<std::uint64_t> handled_off_pool{0};  // by event actors on their own threads
  std::array<live_shard, live_shards> shards;

  std::mutex clients_mtx;
  std::vector<detail::shutdown_client*> clients;  // running stream graphs
  bool clients_closed = false;

  std::size_t client_count() {
    std::lock_guard<std::mutex> guard{clients_mtx};
    return clients.size();
  }
  // Graphs get shutdown_drain_ms to finish; then the rest are cancelled, and
  // we wait for them (a cancelled graph ends at its runners' next step).
  void finish_clients() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds{detail::tuning::shutdown_drain_ms};
    while (client_count() != 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::microseconds{500});
    {
      std::lock_guard<std::mutex> guard{clients_mtx};
      clients_closed = true;
      for (auto* c : clients) c->cancel_for_shutdown();
    }
    while (client_count() != 0) std::this_thread::sleep_for(std::chrono::microseconds{500});
  }

  std::mutex threads_mtx;
  std::vector<std::thread> threads;
  std::size_t detached_threads = 0;
  std::size_t blocking_threads = 0;
  bool shut_down = false;

  std::uint64_t activity() const noexcept {
    return sched.activations() + own_thread_activity.load(std::memory_order_acquire);
  }

  // Nothing queued anywhere, no actor running, and nothing ran meanwhile.
  bool quiescent() {
    auto before = activity();
    if (!sched.queues_empty()) return false;
    for (auto& s : shards) {
      std::lock_guard<std::mutex> guard{s.mtx};
      for (auto* c = s.head; c != nullptr; c = c->live_next_) {
        if (c->mailbox_size() != 0) return false;
        if (c->own_thread_ && !c->waiting_.load(std::memory_order_acquire)) return false;
      }
    }
    return sched.queues_empty() && activity() == before;
  }

  void kill_all(const error& reason) {
    std::vector<actor> victims;
    for (auto& s : shards) {
      std::lock_guard<std::mutex> guard{s.mtx};
      for (auto* c = s.head; c != nullptr; c = c->live_next_)
        if (c->try_add_ref()) victims.emplace_back(c, false);
    }
    for (auto& v : victims)
      actor_cell::deliver(v, detail::make_message(actor{}, 0, detail::kill_msg{reason}), priority::urgent);
  }
};

namespace {
// Once per process: TROUPE_* variables that the config does not follow.
void note_ignored_env(const config& cfg) {
  static std::atomic<bool> said{false};
  if (said.load(std::memory_order_relaxed)) return;
  auto ignored = cfg.ignored_env();
  if (ignored.empty() || said.exchange(true)) return;
  std::string names;
  for (auto& n : ignored) names += (names.empty() ? "" : ", ") + n;
  std::fprintf(stderr,
               "troupe: %s set in the environment but not used: this actor_system's config was not read with "
               "config::load_env()\n",
               names.c_str());
}
}  // namespace

actor_system::actor_system(config cfg)
    : impl_{std::make_unique<impl>(std::move(cfg))}, soft_limit_{impl_->cfg.mailbox_soft_limit} {
  note_ignored_env(impl_->cfg);
  impl_->timers.start();
  impl_->sched.start();
}

actor_system::~actor_system() { shutdown(); }

const config& actor_system::cfg() const noexcept { return impl_->cfg; }
actor_registry& actor_system::registry() noexcept { return impl_->registry; }
group_manager& actor_system::groups() noexcept { return impl_->groups; }
std::uint64_t actor_system::dead_letters() const noexcept { return impl_->dead_letters.load(); }
std::uint64_t actor_system::unexpected_messages() const noexcept { return impl_->unexpected.load(); }
std::size_t actor_system::live_actors() const noexcept { return impl_->live.load(); }

std::uint64_t actor_system::messages_handled() const noexcept {
  return impl_->sched.messages_handled() + impl_->handled_off_pool.load(std::memory_order_relaxed);
}

std::vector<std::size_t> actor_system::mailbox_lengths() const {
  std::vector<std::size_t> out;
  out.reserve(live_actors());
  for (auto& s : impl_->shards) {
    std::lock_guard<std::mutex> guard{s.mtx};
    for (auto* c = s.head; c != nullptr; c = c->live_next_) out.push_back(c->mailbox_size());
  }
  return out;
}

void detail::system_access::count_handled_off_pool(actor_system& s, std::size_t n) noexcept {
  if (n != 0) s.impl_->handled_off_pool.fetch_add(n, std::memory_order_relaxed);
}
std::size_t actor_system::worker_count() const noexcept { return impl_->sched.worker_count(); }

void actor_system::schedule(detail::resumable* r) noexcept { impl_->sched.schedule(r); }
detail::scheduler& detail::system_access::scheduler_of(actor_system& s) noexcept { return s.impl_->sched; }
void actor_system::schedule_fork(detail::resumable* r) noexcept { impl_->sched.schedule_fork(r); }
void actor_system::add_timer(std::chrono::steady_clock::time_point when, std::unique_ptr<detail::timer_task> t) {
  impl_->timers.add(when, std::move(t));
}
void detail::system_access::add_timer(actor_system& s, std::chrono::steady_clock::time_point when,
                                      std::unique_ptr<timer_task> t) {
  s.add_timer(when, std::move(t));
}
bool detail::system_access::register_client(actor_system& s, shutdown_client* c) {
  auto& m = *s.impl_;
  std::lock_guard<std::mutex> guard{m.clients_mtx};
  if (m.clients_closed) return false;
  m.clients.push_back(c);
  return true;
}
void detail::system_access::unregister_client(actor_system& s, shutdown_client* c) noexcept {
  auto& m = *s.impl_;
  std::lock_guard<std::mutex> guard{m.clients_mtx};
  std::erase(m.clients, c);
}
void actor_system::count_dead_letter() noexcept { impl_->dead_letters.fetch_add(1, std::memory_order_relaxed); }
void actor_system::count_unexpected() noexcept { impl_->unexpected.fetch_add(1, std::memory_order_relaxed); }
std::uint64_t actor_system::failed_tasks() const noexcept { return impl_->failed_tasks.load(); }
void actor_system::report_task_failure(std::exception_ptr e) noexcept {
  impl_->failed_tasks.fetch_add(1, std::memory_order_relaxed);
  const char* what = "an exception not derived from std::exception";
  std::string text;
  try {
    std::rethrow_exception(std::move(e));
  } catch (const std::exception& ex) {
    text = ex.what();
    what = text.c_str();
  } catch (...) {
    // not derived from std::exception: `what` says so
  }
  std::fprintf(stderr, "troupe: a posted task failed: %s\n", what);
}
void actor_system::note_activity() noexcept { impl_->own_thread_activity.fetch_add(1, std::memory_order_release); }
std::uint64_t actor_system::next_actor_id() noexcept {
  return impl_->next_id.fetch_add(1, std::memory_order_relaxed) + 1;
}

void actor_system::add_live(actor_cell* c) {
  auto shard = static_cast<std::uint32_t>(c->id() % live_shards);
  auto& s = impl_->shards[shard];
  impl_->live.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> guard{s.mtx};
  c->live_shard_ = shard;
  c->live_prev_ = nullptr;
  c->live_next_ = s.head;
  if (s.head != nullptr) s.head->live_prev_ = c;
  s.head = c;
}

void actor_system::remove_live(actor_cell* c) noexcept {
  if (c->live_shard_ == actor_cell::not_live) return;
  auto& s = impl_->shards[c->live_shard_];
  {
    std::lock_guard<std::mutex> guard{s.mtx};
    if (c->live_prev_ != nullptr) c->live_prev_->live_next_ = c->live_next_;
    else s.head = c->live_next_;
    if (c->live_next_ != nullptr) c->live_next_->live_prev_ = c->live_prev_;
    c->live_prev_ = c->live_next_ = nullptr;
    c->live_shard_ = actor_cell::not_live;
  }
  impl_->live.fetch_sub(1, std::memory_order_release);
}

actor actor_system::launch(event_actor* a, bool detached, const affinity& own) {
  add_live(a);
  if (!detached) {
    schedule(a);  // runs make_behavior on the first activation
    return actor{a, false};
  }
  a->own_thread_ = true;
  a->sem_ = std::make_unique<detail::semaphore>(1);  // the spawn token
  actor keep{a, true};
  std::lock_guard<std::mutex> guard{impl_->threads_mtx};
  auto index = impl_->detached_threads++;
  std::vector<int> cores;
  if (!own.empty()) cores = own.for_thread(index);
  else if (!impl_->detached_aff.empty()) cores = impl_->detached_aff.for_thread(index);
  impl_->threads.emplace_back([this, keep = std::move(keep), cores = std::move(cores)] {
    pin_current_thread(cores);
    auto* self = static_cast<event_actor*>(keep.get());
    const auto throughput = impl_->cfg.throughput;
    for (;;) {
      self->sem_->acquire();
      self->waiting_.store(false, std::memory_order_release);
      for (auto r = self->resume(throughput); r != detail::resume_result::done; r = self->resume(throughput)) {
      }
      detail::system_access::count_handled_off_pool(*this, std::exchange(detail::handled_unpublished, 0));
      note_activity();
      if (self->terminated()) break;
      self->waiting_.store(true, std::memory_order_release);
    }
  });
  return actor{a, false};
}

actor actor_system::launch_blocking(blocking_actor* a, std::function<void(blocking_actor&)> body) {
  add_live(a);
  actor result{a, true};
  std::lock_guard<std::mutex> guard{impl_->threads_mtx};
  auto index = impl_->blocking_threads++;
  std::vector<int> cores;
  if (!impl_->blocking_aff.empty()) cores = impl_->blocking_aff.for_thread(index);
  impl_->threads.emplace_back([a, body = std::move(body), cores = std::move(cores)]() mutable {
    actor keep{a, false};  // adopts the spawn reference
    pin_current_thread(cores);
    try {
      body(*a);
      a->finish(error{});
    } catch (const actor_exited& e) {
      a->finish(e.reason());
    } catch (const std::exception& e) {
      a->finish(error{errc::unhandled_exception, e.what()});
    } catch (...) {
      a->finish(error{errc::unhandled_exception, "unknown exception"});
    }
  });
  return result;
}

void actor_system::shutdown() {
  {
    std::lock_guard<std::mutex> guard{impl_->threads_mtx};
    if (impl_->shut_down) return;
    impl_->shut_down = true;
  }
  auto& m = *impl_;
  // 1. Let every queued message (and queued task) be handled. Stream graphs
  //    that keep the workers busy (an endless source) are cancelled once
  //    they have had tuning::shutdown_drain_ms.
  auto pause = std::chrono::microseconds{50};
  const auto drain_until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds{detail::tuning::shutdown_drain_ms};
  bool graphs_cancelled = false;
  while (!m.quiescent()) {
    if (!graphs_cancelled && std::chrono::steady_clock::now() >= drain_until && m.client_count() != 0) {
      std::lock_guard<std::mutex> guard{m.clients_mtx};
      for (auto* c : m.clients) c->cancel_for_shutdown();
      graphs_cancelled = true;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds{2000});
  }
  // 2. Whatever is left only waits for mail that will never come.
  m.registry.clear();
  m.groups.clear();
  while (m.live.load(std::memory_order_acquire) != 0) {
    m.kill_all(error{errc::system_shutdown, "the actor system shut down"});
    for (int i = 0; i < 200 && m.live.load(std::memory_order_acquire) != 0; ++i)
      std::this_thread::sleep_for(std::chrono::microseconds{500});
  }
  // 3. Graphs whose entries have just ended finish (or are cancelled).
  m.finish_clients();
  // 4. Stop the machinery.
  m.timers.stop();
  m.sched.stop();
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> guard{m.threads_mtx};
    threads.swap(m.threads);
  }
  for (auto& t : threads) t.join();
}

// ---------------------------------------------------------- scoped_actor

scoped_actor::scoped_actor(actor_system& sys) : self_{detail::system_access::construct<blocking_actor>(sys)} {}

scoped_actor::~scoped_actor() {
  self_->finish(error{});
  self_->release();
}

}  // namespace troupe
