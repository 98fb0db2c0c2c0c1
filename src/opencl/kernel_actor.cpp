// kernel_actor.cpp: the untyped part of kernel actors: the checks before a
// spawn, completion callbacks, the in-flight bound, buffer reuse, the end.
#include "troupe/opencl/kernel_actor.hpp"

#include <atomic>

#include "troupe/ext/messages.hpp"
#include "troupe/ext/system.hpp"

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

// ---- mem_ref's shared state and the buffer pools

class buffer_pool {
 public:
  buffer_pool(std::size_t args, std::size_t keep) : free_(args), keep_{keep} {}

  /// A free buffer of `bytes` to twice that for argument `arg`, or an empty
  /// one. The commands that still used it go to `waits`.
  cl::Buffer take(std::size_t arg, std::size_t bytes, std::vector<cl::Event>& waits) {
    entry found;
    {
      std::lock_guard<std::mutex> guard{mtx_};
      if (arg >= free_.size()) return {};  // closed
      auto& free = free_[arg];
      for (auto it = free.begin(); it != free.end(); ++it) {
        if (it->bytes >= bytes && it->bytes / 2 <= bytes) {
          found = std::move(*it);
          free.erase(it);
          break;
        }
      }
    }
    for (auto& e : found.pending) {
      int status = CL_COMPLETE;
      try {
        status = event_status(e);
      } catch (const opencl_error&) {  // NOLINT(bugprone-empty-catch): an event we cannot ask about is not waited for
      }
      // Still queued or running; one that ended, well or not, is not waited
      // for (a command that waits for a failed event fails too).
      if (status > CL_COMPLETE) waits.push_back(std::move(e));
    }
    return std::move(found.buf);
  }

  /// Keeps `b` for argument `arg` (at most `keep` per argument: the oldest
  /// goes); `pending`: commands that may still use it.
  void give(std::size_t arg, cl::Buffer b, std::vector<cl::Event> pending) noexcept {
    std::size_t bytes = 0;
    if (clGetMemObjectInfo(b(), CL_MEM_SIZE, sizeof bytes, &bytes, nullptr) != CL_SUCCESS) return;
    entry dropped;  // released after the lock
    try {
      std::lock_guard<std::mutex> guard{mtx_};
      if (closed_ || arg >= free_.size()) return;
      auto& free = free_[arg];
      if (free.size() >= keep_) {
        dropped = std::move(free.front());
        free.erase(free.begin());
      }
      free.push_back(entry{std::move(b), bytes, std::move(pending)});
    } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory: the buffer is freed instead
    }
  }

  /// The actor has ended: frees the buffers, and those given back later.
  void close() noexcept {
    std::vector<std::vector<entry>> drop;
    std::lock_guard<std::mutex> guard{mtx_};
    closed_ = true;
    drop.swap(free_);
  }

 private:
  struct entry {
    cl::Buffer buf;
    std::size_t bytes = 0;
    std::vector<cl::Event> pending;
  };
  std::mutex mtx_;
  std::vector<std::vector<entry>> free_;  // per argument, oldest first
  std::size_t keep_;
  bool closed_ = false;
};

// `written` and `readers` are guarded by the device's data_mutex(); the rest
// is set when the state is made.
class mem_state {
 public:
  mem_state(device d, cl::Buffer b) : dev{std::move(d)}, buf{std::move(b)} {}
  mem_state(const mem_state&) = delete;
  mem_state& operator=(const mem_state&) = delete;
  ~mem_state() {
    // The last copy has gone: the buffer goes back to its pool, with the
    // commands that may still use it (its next user waits for them).
    auto p = pool.lock();
    if (!p) return;
    try {
      std::vector<cl::Event> pending = std::move(readers);
      if (written() != nullptr) pending.push_back(std::move(written));
      p->give(arg, std::move(buf), std::move(pending));
    } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory: the buffer is freed instead
    }
  }

  /// A command that reads the buffer; those that have ended are forgotten
  /// now and then, so that a buffer read by many kernels keeps few events.
  void add_reader(const cl::Event& e) {
    if (readers.size() >= 8)
      std::erase_if(readers, [](const cl::Event& r) {
        try {
          return event_status(r) <= CL_COMPLETE;
        } catch (const opencl_error&) {
          return true;
        }
      });
    readers.push_back(e);
  }

  const device dev;
  cl::Buffer buf;
  cl::Event written;                // the last command that wrote the buffer (empty: none since it was made)
  std::vector<cl::Event> readers;   // commands that read it since
  std::weak_ptr<buffer_pool> pool;  // where the buffer goes back (a kernel actor's out<T, ref>)
  std::size_t arg = 0;              // ... for this argument
};

std::shared_ptr<mem_state> wrap_buffer(device d, cl::Buffer buf, cl::Event ready) {
  auto s = std::make_shared<mem_state>(std::move(d), std::move(buf));
  s->written = std::move(ready);
  return s;
}

std::shared_ptr<mem_state> upload_bytes(const device& d, const void* data, std::size_t bytes) {
  try {
    auto b = make_buffer(d, bytes);
    (void)enqueue_write(d.transfer_queue(), b, bytes, data, {}, true);
    return std::make_shared<mem_state>(d, std::move(b));
  } catch (const opencl_error& e) {
    throw opencl_error{std::string{"mem_ref::upload: "} + e.what(), e.code()};
  }
}

void read_bytes(mem_state& s, void* out, std::size_t bytes) {
  try {
    cl::Event read;
    {
      // A reader like a kernel: a write enqueued later by a kernel actor waits for it.
      std::lock_guard<std::mutex> guard{data_mutex(s.dev)};
      read = enqueue_read(s.dev.transfer_queue(), s.buf, bytes, out, {&s.written, 1});
      s.add_reader(read);
    }
    flush(s.dev.transfer_queue());
    wait_for(read);
  } catch (const opencl_error& e) {
    throw opencl_error{std::string{"mem_ref::to_host: "} + e.what(), e.code()};
  }
}

const device& device_of(const mem_state* s) noexcept {
  static const device none;
  return s != nullptr ? s->dev : none;
}

const cl::Buffer& buffer_of(const mem_state* s) noexcept {
  static const cl::Buffer none;
  return s != nullptr ? s->buf : none;
}

cl::Event last_write(const mem_state& cs) {
  std::lock_guard<std::mutex> guard{data_mutex(cs.dev)};
  return cs.written;
}

// ---- kernel actors

struct kernel_link final : ext::shutdown_client {
  std::mutex mtx;
  kernel_actor_base* target = nullptr;  // null once the actor has ended
  std::atomic<bool> parked{false};
  std::atomic<std::uint64_t> posted{0};
  std::atomic<bool> stopping{false};  // the actor system is shutting down
  actor_system* sys = nullptr;        // where it is registered as a shutdown client (or null)

  // The actor system's thread, at shutdown, once the actors have had their
  // grace period: from now on the actor refuses the requests it has not
  // enqueued. The notice wakes it, parked or idle, to do so at once.
  void cancel_for_shutdown() noexcept override {
    stopping.store(true, std::memory_order_seq_cst);
    complete(*this, 0, CL_COMPLETE);
  }
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

kernel_parts make_parts(const program& p, const std::string& name, const nd_range& range, std::size_t tags,
                        std::size_t in_flight) {
  if (auto bad = range.problem(); !bad.empty()) throw opencl_error{"kernel '" + name + "': bad nd_range: " + bad};
  if (in_flight == 0) throw opencl_error{"kernel '" + name + "': max_in_flight must be at least 1"};
  kernel_parts parts{p.dev(), p.make_kernel(name), {}, in_flight};
  try {
    const auto args = argument_count(parts.kernel);
    if (args != tags)
      throw opencl_error{"kernel '" + name + "' takes " + std::to_string(args) + " arguments, but " +
                         std::to_string(tags) + " argument tags were given"};
    parts.queue = make_queue(parts.dev);
  } catch (const opencl_error& e) {
    if (e.code() == 0) throw;
    throw opencl_error{"kernel '" + name + "': " + e.what(), e.code()};
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
      pool_{std::make_shared<buffer_pool>(tags, parts.in_flight + 1)},
      max_in_flight_{parts.in_flight} {
  link_->target = this;
  // Told of the system's shutdown; a system already shutting down takes no
  // more clients: then the actor refuses every request.
  if (ext::register_shutdown_client(system(), link_.get())) link_->sys = &system();
  else link_->stopping.store(true);
}

kernel_actor_base::~kernel_actor_base() {
  if (link_->sys != nullptr) ext::unregister_shutdown_client(*link_->sys, link_.get());
}

bool kernel_actor_base::stopping() const noexcept { return link_->stopping.load(std::memory_order_relaxed); }

troupe::error kernel_actor_base::shutdown_error() {
  return troupe::error{errc::system_shutdown, "opencl: the actor system is shutting down; the request was not run"};
}

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

void kernel_actor_base::begin(bool refs) {
  waits_.clear();
  taken_.clear();
  kernel_event_ = cl::Event{};
  last_ = cl::Event{};
  enqueued_ = false;
  if (refs) refs_ = std::unique_lock<std::mutex>{data_mutex(dev_)};
}

cl::Buffer kernel_actor_base::take_buffer(std::size_t arg, std::size_t bytes) {
  taken_.clear();
  if (auto b = pool_->take(arg, bytes, taken_); b() != nullptr) return b;
  return make_buffer(dev_, bytes);
}

void kernel_actor_base::write(const cl::Buffer& b, std::size_t bytes, const void* src) {
  // In order on the queue: the kernel comes after the write. The write
  // waits for what still used the buffer (another queue's commands).
  enqueued_ = true;
  (void)enqueue_write(queue_, b, bytes, src, taken_);
  taken_.clear();
}

void kernel_actor_base::set_buffer(std::size_t arg, const cl::Buffer& b) {
  set_arg(kernel_, arg, b);
  for (auto& e : taken_) waits_.push_back(std::move(e));
  taken_.clear();
}

void kernel_actor_base::set_local(std::size_t arg, std::size_t bytes) { set_arg(kernel_, arg, bytes, nullptr); }

void kernel_actor_base::set_value(std::size_t arg, std::size_t size, const void* value) {
  set_arg(kernel_, arg, size, value);
}

void kernel_actor_base::use_ref(std::size_t arg, mem_state& s, bool writes) {
  set_arg(kernel_, arg, s.buf);
  if (s.written() != nullptr) waits_.push_back(s.written);
  if (writes)
    for (auto& r : s.readers) waits_.push_back(r);
}

void kernel_actor_base::run(const nd_range& r) {
  enqueued_ = true;
  kernel_event_ = enqueue_kernel(queue_, kernel_, r.offset, r.global, r.local, waits_);
  last_ = kernel_event_;
}

void kernel_actor_base::read(const cl::Buffer& b, std::size_t bytes, void* dst) {
  last_ = enqueue_read(queue_, b, bytes, dst);  // in order: after the kernel
}

void kernel_actor_base::read_ref(mem_state& s) { s.add_reader(kernel_event_); }

void kernel_actor_base::wrote_ref(mem_state& s) {
  s.written = kernel_event_;
  s.readers.clear();  // the write waited for them
}

void kernel_actor_base::read_ref_back(mem_state& s, std::size_t bytes, void* dst) {
  read(s.buf, bytes, dst);
  s.add_reader(last_);
}

std::shared_ptr<mem_state> kernel_actor_base::hand_out(std::size_t arg, cl::Buffer b) {
  auto s = std::make_shared<mem_state>(dev_, std::move(b));
  s->written = kernel_event_;
  s->pool = pool_;
  s->arg = arg;
  return s;
}

std::uint64_t kernel_actor_base::end() {
  if (refs_.owns_lock()) refs_.unlock();
  const auto id = ++next_id_;
  auto* d = new callback_data{link_, id};
  try {
    on_complete(last_, &on_event, d);
  } catch (...) {
    delete d;
    throw;
  }
  ++in_flight_;  // its completion comes, whatever happens next
  flush(queue_);
  return id;
}

void kernel_actor_base::abort() noexcept {
  if (refs_.owns_lock()) refs_.unlock();
  if (enqueued_) finish(queue_);  // host memory of what was enqueued is freed next
  enqueued_ = false;
}

void kernel_actor_base::give_buffer(std::size_t arg, cl::Buffer b) noexcept {
  // The request is done: nothing of ours uses the buffer any more.
  pool_->give(arg, std::move(b), {});
}

void kernel_actor_base::on_exit() noexcept {
  {
    std::lock_guard<std::mutex> guard{link_->mtx};
    link_->target = nullptr;  // callbacks (and the shutdown notice) from now on do nothing
  }
  if (link_->sys != nullptr) {
    ext::unregister_shutdown_client(*link_->sys, link_.get());
    link_->sys = nullptr;
  }
  finish(queue_);  // host memory of the commands in flight is freed below
  abandon_all();
  pool_->close();
  event_actor::on_exit();
}

}  // namespace detail
}  // namespace troupe::opencl
