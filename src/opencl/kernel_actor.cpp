// kernel_actor.cpp: the untyped part of kernel actors: the checks before a
// spawn, completion callbacks, the in-flight bound, buffer reuse, the end.
#include "troupe/opencl/kernel_actor.hpp"

#include <atomic>
#include <thread>

#include "troupe/ext/messages.hpp"

namespace troupe::opencl {

std::size_t nd_range::work_items() const noexcept {
  std::size_t n = global.empty() ? 0 : 1;
  for (auto g : global) n *= g;
  return n;
}

std::string nd_range::problem() const {
  if (global.empty() || global.size() > 3)
    return "the global size has " + std::to_string(global.size()) + " dimensions (1 to 3)";
  for (std::size_t d = 0; d < global.size(); ++d)
    if (global[d] == 0) return "global size " + std::to_string(d) + " is 0";
  if (!offset.empty() && offset.size() != global.size())
    return "the offset has " + std::to_string(offset.size()) + " dimensions, the global size " +
           std::to_string(global.size());
  if (!local.empty()) {
    if (local.size() != global.size())
      return "the local size has " + std::to_string(local.size()) + " dimensions, the global size " +
             std::to_string(global.size());
    for (std::size_t d = 0; d < local.size(); ++d)
      if (local[d] == 0 || global[d] % local[d] != 0)
        return "local size " + std::to_string(local[d]) + " does not divide global size " + std::to_string(global[d]) +
               " (dimension " + std::to_string(d) + ")";
  }
  return {};
}

namespace detail {

struct kernel_link {
  std::mutex mtx;
  kernel_actor_base* target = nullptr;  // null once the actor has ended
  std::atomic<bool> parked{false};
  std::atomic<std::uint64_t> posted{0};
};

namespace {
struct callback_data {
  std::shared_ptr<kernel_link> link;
  std::uint64_t id;
};

void CL_CALLBACK on_event(cl_event, cl_int status, void* user) {
  std::unique_ptr<callback_data> d{static_cast<callback_data*>(user)};
  complete(*d->link, d->id, status);
}
}  // namespace

troupe::error kernel_error(opencl_errc code, const std::string& what) { return troupe::error{code, what}; }

troupe::error cl_failure(const char* what, const cl::Error& e) {
  return kernel_error(opencl_errc::call_failed, std::string{what} + ": " + describe(e));
}

kernel_parts make_parts(const program& p, const std::string& name, const nd_range& range, std::size_t tags,
                        std::size_t in_flight) {
  if (auto bad = range.problem(); !bad.empty()) throw opencl_error{"kernel '" + name + "': bad nd_range: " + bad};
  if (in_flight == 0) throw opencl_error{"kernel '" + name + "': max_in_flight must be at least 1"};
  kernel_parts parts{p.dev(), p.make_kernel(name), {}, in_flight};
  try {
    const auto args = parts.kernel.getInfo<CL_KERNEL_NUM_ARGS>();
    if (args != tags)
      throw opencl_error{"kernel '" + name + "' takes " + std::to_string(args) + " arguments, but " +
                         std::to_string(tags) + " argument tags were given"};
    parts.queue = cl::CommandQueue{parts.dev.context(), parts.dev.id()};
  } catch (const cl::Error& e) {
    throw opencl_error{"kernel '" + name + "': " + describe(e), e.err()};
  }
  return parts;
}

void complete(kernel_link& l, std::uint64_t id, int status) noexcept {
  std::lock_guard<std::mutex> guard{l.mtx};
  auto* a = l.target;
  if (a == nullptr) return;  // ended: its on_exit answered the request
  l.posted.fetch_add(1, std::memory_order_seq_cst);
  try {
    ext::deliver(*a, ext::make_mail(actor{}, 0, kernel_done{id, status}), priority::urgent);
  } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory for a message node; the request is answered
                   // when the actor ends (on_exit)
  }
  // The actor had parked with its gate closed: it is ours to schedule.
  if (l.parked.exchange(false, std::memory_order_seq_cst)) a->resume_parked();
}

kernel_actor_base::kernel_actor_base(kernel_parts parts, std::size_t tags)
    : dev_{std::move(parts.dev)},
      kernel_{std::move(parts.kernel)},
      queue_{std::move(parts.queue)},
      link_{std::make_shared<kernel_link>()},
      max_in_flight_{parts.in_flight},
      pool_(tags) {
  link_->target = this;
}

kernel_actor_base::~kernel_actor_base() = default;

bool kernel_actor_base::park() noexcept {
  auto& l = *link_;
  // Read before the flag is set: from then on a completion's callback may
  // take the flag and resume this actor on another worker, whose finish()
  // writes completed_ (ThreadSanitizer saw that race).
  const std::uint64_t completed = completed_;
  l.parked.store(true, std::memory_order_seq_cst);
  // A completion posted since we last looked: run on (unless its callback
  // has already taken the parked flag, and so schedules us itself).
  if (l.posted.load(std::memory_order_seq_cst) != completed) return !l.parked.exchange(false);
  return true;
}

void kernel_actor_base::watch(const cl::Event& last, std::uint64_t id) {
  auto* d = new callback_data{link_, id};
  try {
    const_cast<cl::Event&>(last).setCallback(CL_COMPLETE, &on_event, d);
  } catch (...) {
    delete d;
    throw;
  }
  ++in_flight_;
  queue_.flush();
}

cl::Buffer kernel_actor_base::take_buffer(std::size_t arg, std::size_t bytes) {
  auto& free = pool_[arg];
  for (auto it = free.begin(); it != free.end(); ++it) {
    if (it->second >= bytes && it->second / 2 <= bytes) {
      cl::Buffer b = std::move(it->first);
      free.erase(it);
      return b;
    }
  }
  cl::Buffer b{dev_.context(), CL_MEM_READ_WRITE, bytes};
  return b;
}

void kernel_actor_base::give_buffer(std::size_t arg, cl::Buffer b) {
  auto& free = pool_[arg];
  std::size_t bytes = 0;
  try {
    bytes = b.getInfo<CL_MEM_SIZE>();
  } catch (const cl::Error&) {
    return;
  }
  if (free.size() > max_in_flight_) free.erase(free.begin());  // keep the pool small
  free.emplace_back(std::move(b), bytes);
}

void kernel_actor_base::drain_queue() noexcept {
  try {
    queue_.finish();
  } catch (const cl::Error&) {  // NOLINT(bugprone-empty-catch): the queue is broken; nothing of ours runs on it
  }
}

void kernel_actor_base::on_exit() noexcept {
  {
    std::lock_guard<std::mutex> guard{link_->mtx};
    link_->target = nullptr;  // callbacks from now on do nothing
  }
  drain_queue();  // host memory of the commands in flight is freed below
  abandon_all();
  pool_.clear();
  event_actor::on_exit();
}

}  // namespace detail
}  // namespace troupe::opencl
