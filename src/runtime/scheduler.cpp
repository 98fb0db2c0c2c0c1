#include "scheduler.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

#include "troupe/detail/assert.hpp"
#include "troupe/detail/tuning.hpp"

namespace troupe::detail {

thread_local constinit worker* current_worker = nullptr;

thread_local constinit std::uint64_t handled_unpublished = 0;

namespace {

// A worker's wake flag is a futex word. Raw futex calls rather than
// std::atomic::wait/notify: the sleep has a timeout (libstdc++'s wait has
// none, and its notify skips the system call for waiters it did not count).
// false when `timeout_us` (0: none) passed first.
bool futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, std::uint32_t timeout_us) noexcept {
  timespec ts{static_cast<std::time_t>(timeout_us / 1'000'000), static_cast<long>(timeout_us % 1'000'000) * 1000};
  auto rc = syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected,
                    timeout_us != 0 ? &ts : nullptr, nullptr, 0);
  return !(rc != 0 && errno == ETIMEDOUT);
}
void futex_wake(std::atomic<std::uint32_t>& word) noexcept {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// Search budget before parking, in rounds (a round visits every victim and
// then pauses ~0.3-1 us): moderate up to ~50 us, relaxed ~5 us.
constexpr std::uint32_t spin_rounds(polling p) {
  switch (p) {
    case polling::aggressive:
      return UINT32_MAX;
    case polling::moderate:
      return tuning::spin_rounds_moderate;
    case polling::relaxed:
      return tuning::spin_rounds_relaxed;
  }
  return tuning::spin_rounds_moderate;
}

// Moderate polling adapts each worker's budget between relaxed's and its
// own: a search that finds work after r rounds keeps the budget at 2r at
// least (spinning pays when work comes back within microseconds, as in a
// busy graph or a ping-pong); a search that parks halves it. Work that comes
// at gaps longer than the budget (a source paced at 10k elements/s) then
// costs a wake-up per gap instead of ~50 us of spinning per gap. The other
// strategies keep their fixed budget.
std::uint32_t budget_after_work(polling p, std::uint32_t budget, std::uint32_t rounds) {
  if (p != polling::moderate) return budget;
  return std::min(spin_rounds(polling::moderate), std::max(budget, 2 * rounds));
}
std::uint32_t budget_after_park(polling p, std::uint32_t budget) {
  if (p != polling::moderate) return budget;
  return std::max(spin_rounds(polling::relaxed), budget / 2);
}
}  // namespace

bool worker_is_free() noexcept {
  worker* w = current_worker;
  if (w == nullptr) return true;
  if (w->has_own_work() || w->sched_->global_size_.load(std::memory_order_relaxed) != 0) return false;
  // Queued work elsewhere is ours to steal: then we are not free either.
  for (auto& other : w->sched_->workers_)
    if (other.get() != w && other->has_queued_work()) return false;
  return true;
}

bool on_worker_thread() noexcept { return current_worker != nullptr; }

scheduler* current_scheduler() noexcept {
  worker* w = current_worker;
  return w != nullptr ? w->sched_ : nullptr;
}

bool help_one() noexcept {
  worker* w = current_worker;
  if (w == nullptr) return false;
  resumable* r = w->find_work();
  if (r == nullptr) r = w->steal_any();
  if (r == nullptr) {
    flush_deferred();  // the joiner is about to wait
    w->publish_handled();
    return false;
  }
  w->run_one(r);
  return true;
}

// ---------------------------------------------------------------- worker

worker::worker(scheduler& s, std::size_t index) : sched_{&s}, index_{index}, spin_budget_{spin_rounds(s.polling_)} {}

void worker::push_local(resumable* r) noexcept {
  auto t = tail_.load(std::memory_order_relaxed);
  auto h = head_.load(std::memory_order_acquire);
  if (t - h >= ring_size) {
    sched_->push_global(r);
  } else {
    ring_[t & (ring_size - 1)].store(r, std::memory_order_relaxed);
    tail_.store(t + 1, std::memory_order_release);
  }
  sched_->notify_from_worker();
}

thread_local constinit bool next_unannounced = false;

void announce_next_slow() noexcept {
  next_unannounced = false;
  worker* w = current_worker;
  if (w != nullptr && w->next_.load(std::memory_order_relaxed) != nullptr) w->announce();
}

void worker::announce() noexcept { sched_->notify_from_worker(); }

// Chase-Lev work-stealing deque (Le, Pop, Cohen, Zappa Nardelli, PPoPP'13),
// fixed capacity; seq_cst operations stand in for the paper's fences so that
// ThreadSanitizer understands the synchronisation.
void worker::push_lifo(resumable* r) noexcept {
  auto b = lifo_bottom_.load(std::memory_order_relaxed);
  auto t = lifo_top_.load(std::memory_order_acquire);
  if (b - t >= lifo_size) {
    sched_->push_global(r);
  } else {
    lifo_[b & (lifo_size - 1)].store(r, std::memory_order_relaxed);
    lifo_bottom_.store(b + 1, std::memory_order_seq_cst);
  }
  sched_->notify_from_worker();
}

resumable* worker::pop_lifo() noexcept {
  auto b = lifo_bottom_.load(std::memory_order_relaxed) - 1;
  lifo_bottom_.store(b, std::memory_order_seq_cst);
  auto t = lifo_top_.load(std::memory_order_seq_cst);
  if (t > b) {
    lifo_bottom_.store(b + 1, std::memory_order_relaxed);
    return nullptr;
  }
  resumable* r = lifo_[b & (lifo_size - 1)].load(std::memory_order_relaxed);
  if (t == b) {  // last element: race the thieves for it
    if (!lifo_top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst, std::memory_order_relaxed)) r = nullptr;
    lifo_bottom_.store(b + 1, std::memory_order_relaxed);
  }
  return r;
}

resumable* worker::steal_lifo() noexcept {
  auto t = lifo_top_.load(std::memory_order_seq_cst);
  auto b = lifo_bottom_.load(std::memory_order_seq_cst);
  if (t >= b) return nullptr;
  resumable* r = lifo_[t & (lifo_size - 1)].load(std::memory_order_relaxed);
  if (!lifo_top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst, std::memory_order_relaxed))
    return nullptr;  // lost the race; the caller moves on
  return r;
}

resumable* worker::steal() noexcept {
  auto h = head_.load(std::memory_order_acquire);
  for (;;) {
    auto t = tail_.load(std::memory_order_acquire);
    if (h >= t) return nullptr;
    resumable* r = ring_[h & (ring_size - 1)].load(std::memory_order_relaxed);
    if (head_.compare_exchange_weak(h, h + 1, std::memory_order_acq_rel, std::memory_order_acquire)) return r;
  }
}

resumable* worker::steal_next(resumable* expected) noexcept {
  if (expected == nullptr) return nullptr;
  if (next_.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel)) return expected;
  return nullptr;
}

bool worker::has_own_work() const noexcept {
  return next_.load(std::memory_order_relaxed) != nullptr ||
         lifo_top_.load(std::memory_order_relaxed) < lifo_bottom_.load(std::memory_order_relaxed) ||
         head_.load(std::memory_order_relaxed) < tail_.load(std::memory_order_relaxed);
}

bool worker::has_queued_work() const noexcept {
  return lifo_top_.load(std::memory_order_relaxed) < lifo_bottom_.load(std::memory_order_relaxed) ||
         head_.load(std::memory_order_relaxed) < tail_.load(std::memory_order_relaxed);
}

bool worker::has_work() const noexcept {
  return head_.load(std::memory_order_acquire) < tail_.load(std::memory_order_acquire) ||
         lifo_top_.load(std::memory_order_acquire) < lifo_bottom_.load(std::memory_order_acquire) ||
         next_.load(std::memory_order_acquire) != nullptr;
}

resumable* worker::pop_local() noexcept {
  // The next slot first (locality), but not forever: after 32 runs in a row
  // it goes to the back of the ring so older work on this worker gets its
  // turn. With no older work here it stays: sent to the ring, a sequential
  // chain (a token ring, a ping-pong) would be stolen by a searching worker
  // every 33 activations, keep both cores busy and move its cache lines.
  if (next_.load(std::memory_order_relaxed) != nullptr) {
    if (++next_streak_ > 32 && !has_queued_work()) next_streak_ = 0;  // look again in 32
    if (next_streak_ <= 32) {
      if (auto* r = next_.exchange(nullptr, std::memory_order_acq_rel)) return r;
    } else if (auto* r = next_.exchange(nullptr, std::memory_order_acq_rel)) {
      push_local(r);
    }
  }
  next_streak_ = 0;
  // Yielded actors (ring) get a turn at least every 8th pick even while the
  // LIFO deque keeps filling up.
  if (tick_ % 8 == 0)
    if (auto* r = steal()) return r;
  if (auto* r = pop_lifo()) return r;
  return steal();  // own ring, FIFO
}

// Actors that flood a receiver (resume_result::held) wait on their worker
// until the receiver is back under its mailbox's soft limit: every 16th pick
// looks whether one may go on, and so does a worker without other work (its
// own or stolen) while it spins, up to tuning::hold_max_us; then the oldest
// runs anyway (two actors flooding each other, or a receiver that waits for
// the held actor, must not wait forever).
resumable* worker::take_held(bool ready_only) noexcept {
  for (auto it = held_.begin(); it != held_.end(); ++it) {
    if (ready_only && it->r->held_back()) continue;
    resumable* r = it->r;
    held_.erase(it);
    return r;
  }
  return nullptr;
}

void worker::hold(resumable* r) noexcept {
  try {
    held_.push_back({r, std::chrono::steady_clock::now()});
  } catch (...) {
    push_local(r);  // out of memory: it only yields
  }
}

resumable* worker::wait_for_held() noexcept {
  const auto limit = held_.front().since + std::chrono::microseconds{tuning::hold_max_us};
  for (;;) {
    if (auto* r = take_held(true)) return r;
    if (auto* r = search_round()) return r;
    if (std::chrono::steady_clock::now() >= limit) return take_held(false);
    for (int k = 0; k < 64; ++k) cpu_relax();
  }
}

resumable* worker::find_work() noexcept {
  // Every 61st pick looks at the global queue first, so external work is not
  // starved by a busy local loop.
  if (++tick_ % 61 == 0)
    if (auto* r = sched_->pop_global()) return r;
  if (!held_.empty() && tick_ % 16 == 0)
    if (auto* r = take_held(true)) return r;
  if (auto* r = pop_local()) return r;
  return sched_->pop_global();
}

resumable* worker::search() noexcept {
  auto& s = *sched_;
  // Out of work: give back the references held for batching (an actor whose
  // last handle is among them can then end as unreachable).
  flush_deferred();
  publish_handled();
  if (!held_.empty()) return wait_for_held();
  for (;;) {
    for (std::uint32_t round = 0; round < spin_budget_; ++round) {
      if (s.stop_.load(std::memory_order_acquire)) return nullptr;
      auto* r = search_round();
      if (r != nullptr) {
        spin_budget_ = budget_after_work(s.polling_, spin_budget_, round + 1);
        return r;
      }
      if (s.polling_ == polling::aggressive && round % 64 == 63) std::this_thread::yield();
      for (int k = 0; k < 64; ++k) cpu_relax();
    }
    spin_budget_ = budget_after_park(s.polling_, spin_budget_);
    if (!park()) return nullptr;
  }
}

resumable* worker::search_round() noexcept {
  auto& s = *sched_;
  const auto n = s.workers_.size();
  if (auto* r = s.pop_global()) return r;
  auto start = static_cast<std::size_t>(rng_ % n);
  rng_ = rng_ * 6364136223846793005ULL + 1442695040888963407ULL;
  for (std::size_t i = 0; i < n; ++i) {
    auto& victim = *s.workers_[(start + i) % n];
    if (&victim == this) continue;
    if (auto* r = victim.steal_lifo()) return r;
    if (auto* r = victim.steal()) return r;
    // Take a victim's next slot only if the same actor sat there for a
    // whole round while its owner stayed in one activation: the owner is
    // busy with something long. (The actor alone is not enough: in a
    // ping-pong the slot holds the same actor every other activation, and
    // taking it moved the pair to the other core over and over.)
    auto* seen = victim.next_.load(std::memory_order_acquire);
    const auto runs = victim.activations_.load(std::memory_order_relaxed);
    auto& before = seen_next_[victim.index_];
    auto& runs_before = seen_runs_[victim.index_];
    if (seen != nullptr && seen == before && runs == runs_before) {
      before = nullptr;
      if (auto* r = victim.steal_next(seen)) return r;
    } else {
      before = seen;
      runs_before = runs;
    }
  }
  return nullptr;
}

resumable* worker::steal_any() noexcept {
  auto& s = *sched_;
  const auto n = s.workers_.size();
  for (std::size_t i = 1; i < n; ++i) {
    auto& victim = *s.workers_[(index_ + i) % n];
    if (auto* r = victim.steal_lifo()) return r;
    if (auto* r = victim.steal()) return r;
  }
  return nullptr;
}

void worker::run_one(resumable* r) noexcept {
  auto result = r->resume(sched_->throughput_);
  // Counted here, not in a thread-local of the actor layer: a member costs
  // no call and no thread-local address (ping_pong: 4 instructions per
  // message).
  if (++since_flush_ >= tuning::release_flush_every) {
    since_flush_ = 0;
    flush_deferred();
    publish_handled();
  }
  if (result == resume_result::again) push_local(r);
  else if (result == resume_result::held) hold(r);
  activations_.store(activations_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

bool worker::park() noexcept {
  auto& s = *sched_;
  {
    std::lock_guard<std::mutex> guard{s.idle_mtx_};
    TROUPE_ASSERT(std::find(s.idle_list_.begin(), s.idle_list_.end(), this) == s.idle_list_.end(),
                  "P1: a worker parks while it is on the idle list");
    s.idle_list_.push_back(this);
    s.idle_.fetch_add(1, std::memory_order_seq_cst);
  }
  [[maybe_unused]] const auto searchers = s.searching_.fetch_sub(1, std::memory_order_seq_cst);
  TROUPE_ASSERT(searchers >= 1, "P2: more searchers left than were searching");
  // Re-check after announcing. Producers read idle_ with an RMW after they
  // publish work (notify_if_needed), so either they see our increment of
  // idle_ or we see their work here: no lost wake-up, and no fence that
  // ThreadSanitizer could not follow.
  bool work = s.global_size_.load(std::memory_order_acquire) != 0;
  for (auto& w : s.workers_) work = work || w->has_work();
  if (work || s.stop_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> guard{s.idle_mtx_};
    auto it = std::find(s.idle_list_.begin(), s.idle_list_.end(), this);
    if (it != s.idle_list_.end()) {
      s.idle_list_.erase(it);
      s.idle_.fetch_sub(1, std::memory_order_seq_cst);
      s.searching_.fetch_add(1, std::memory_order_seq_cst);
      return !s.stop_.load(std::memory_order_acquire);
    }
    // A waker already took us off the list; its flag is on the way.
  }
  // A wake-up that comes within a short spin and a few yields costs no
  // sleep (as libstdc++'s atomic wait does; measured on prod_cons, where the
  // consumer's worker parks and is woken over and over: going straight to
  // the futex made it ~15% slower). Then sleep: the flag goes 0 -> 2
  // (asleep), so a waker makes the system call only for a sleeper.
  for (int i = 0; i < tuning::park_spins + tuning::park_yields && wake_flag_.load(std::memory_order_acquire) == 0;
       ++i) {
    if (i < tuning::park_spins) cpu_relax();
    else std::this_thread::yield();
  }
  // While another worker is awake, its next slot may fill up behind a long
  // activation, and filling it wakes nobody: sleep at most park_recheck_us,
  // then take ourselves off the list and search again. The last worker to
  // park sleeps until woken.
  const bool others_awake = s.idle_.load(std::memory_order_seq_cst) < s.workers_.size();
  for (;;) {
    std::uint32_t flag = 0;
    if (!wake_flag_.compare_exchange_strong(flag, 2, std::memory_order_acq_rel) && flag == 1) break;
    if (futex_wait(wake_flag_, 2, others_awake ? tuning::park_recheck_us : 0)) continue;
    std::lock_guard<std::mutex> guard{s.idle_mtx_};
    auto it = std::find(s.idle_list_.begin(), s.idle_list_.end(), this);
    if (it == s.idle_list_.end()) continue;  // a waker took us off: its flag is on the way
    s.idle_list_.erase(it);
    s.idle_.fetch_sub(1, std::memory_order_seq_cst);
    s.searching_.fetch_add(1, std::memory_order_seq_cst);
    flag = 2;  // back to 0 unless stop() set it to 1 (then the next park returns at once)
    wake_flag_.compare_exchange_strong(flag, 0, std::memory_order_acq_rel);
    return !s.stop_.load(std::memory_order_acquire);
  }
  TROUPE_ASSERT(wake_flag_.load(std::memory_order_relaxed) == 1, "P3: a woken worker's flag is 1");
  wake_flag_.store(0, std::memory_order_relaxed);
  return !s.stop_.load(std::memory_order_acquire);
}

void worker::run(const std::vector<int>& cores) {
  current_worker = this;
  defer_on_this_thread(true);
  pin_current_thread(cores);
  seen_next_.assign(sched_->workers_.size(), nullptr);
  seen_runs_.assign(sched_->workers_.size(), 0);
  auto& searching = sched_->searching_;
  searching.fetch_add(1, std::memory_order_seq_cst);  // a worker without work is searching
  for (;;) {
    resumable* r = find_work();
    if (r == nullptr) r = search();
    if (r == nullptr) break;  // stop requested
    // Leaving the search: if we were the last searcher, make sure someone
    // else looks for the work that may follow.
    if (searching.fetch_sub(1, std::memory_order_seq_cst) == 1) sched_->notify_if_needed();
    do {
      run_one(r);
      r = find_work();
    } while (r != nullptr);
    searching.fetch_add(1, std::memory_order_seq_cst);
  }
  defer_on_this_thread(false);
  publish_handled();
  current_worker = nullptr;
}

// ------------------------------------------------------------- scheduler

scheduler::scheduler(std::size_t workers, polling p, std::size_t throughput, affinity aff)
    : polling_{p}, throughput_{throughput}, affinity_{std::move(aff)} {
  workers_.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i) workers_.push_back(std::make_unique<worker>(*this, i));
}

scheduler::~scheduler() { stop(); }

void scheduler::start() {
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    std::vector<int> cores;
    if (!affinity_.empty()) cores = affinity_.for_thread(i);
    threads_.emplace_back([w = workers_[i].get(), cores] { w->run(cores); });
  }
}

void scheduler::stop() noexcept {
  if (stop_.exchange(true)) {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    return;
  }
  for (auto& w : workers_) {
    if (w->wake_flag_.exchange(1, std::memory_order_acq_rel) == 2) futex_wake(w->wake_flag_);
  }
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

// Out of line: the fast path (scheduler::schedule, in the header) then
// saves no registers (ping_pong: 22 instructions per message less).
void scheduler::schedule_outside(resumable* r) noexcept {
  push_global(r);
  notify_if_needed();
}

void scheduler::schedule_fork(resumable* r) noexcept {
  if (worker* w = current_worker; w != nullptr && w->sched_ == this) {
    w->push_lifo(r);
    return;
  }
  push_global(r);
  notify_if_needed();
}

void scheduler::push_global(resumable* r) noexcept {
  {
    std::lock_guard<std::mutex> guard{global_mtx_};
    global_.push_back(r);
  }
  global_size_.fetch_add(1, std::memory_order_release);
}

resumable* scheduler::pop_global() noexcept {
  if (global_size_.load(std::memory_order_acquire) == 0) return nullptr;
  std::lock_guard<std::mutex> guard{global_mtx_};
  if (global_.empty()) return nullptr;
  auto* r = global_.front();
  global_.pop_front();
  global_size_.fetch_sub(1, std::memory_order_release);
  return r;
}

void scheduler::notify_if_needed() noexcept {
  // An RMW on idle_ orders our published work against a parking worker's
  // increment of idle_ (see worker::park).
  if (idle_.fetch_add(0, std::memory_order_seq_cst) != 0 && searching_.load(std::memory_order_seq_cst) == 0) wake_one();
}

void scheduler::notify_from_worker() noexcept {
  // The pushing worker is awake and will run this work itself if nobody else
  // does, so a momentarily stale read here costs parallelism, never progress:
  // skip the fence on the common path where no worker is parked.
  if (idle_.load(std::memory_order_relaxed) == 0) return;
  notify_if_needed();
}

void scheduler::wake_one() noexcept {
  worker* w = nullptr;
  {
    std::lock_guard<std::mutex> guard{idle_mtx_};
    if (idle_list_.empty()) return;
    // Another producer may have woken a searcher meanwhile.
    if (searching_.load(std::memory_order_seq_cst) != 0) return;
    w = idle_list_.back();
    idle_list_.pop_back();
    [[maybe_unused]] const auto idle = idle_.fetch_sub(1, std::memory_order_seq_cst);
    TROUPE_ASSERT(idle == idle_list_.size() + 1, "P1: idle_ counts the workers on the idle list");
    searching_.fetch_add(1, std::memory_order_seq_cst);  // it wakes up searching
  }
  if (w->wake_flag_.exchange(1, std::memory_order_acq_rel) == 2) futex_wake(w->wake_flag_);
}

std::uint64_t scheduler::activations() const noexcept {
  std::uint64_t sum = 0;
  for (auto& w : workers_) sum += w->activations();
  return sum;
}

std::uint64_t scheduler::messages_handled() const noexcept {
  std::uint64_t sum = 0;
  for (auto& w : workers_) sum += w->handled_.load(std::memory_order_relaxed);
  return sum;
}

bool scheduler::queues_empty() const noexcept {
  if (global_size_.load(std::memory_order_acquire) != 0) return false;
  for (auto& w : workers_)
    if (w->has_work()) return false;
  return true;
}

}  // namespace troupe::detail
