// checkpoint.cpp: the checkpointer of a stream graph (detail/checkpointer.hpp)
// and the checkpoint files.
//
// A checkpoint is one file, <dir>/chk-<id, 20 digits>.troupe, written as
// <name>.tmp, flushed to disk, renamed, and the directory flushed: a file
// with the final name is whole. Format version 1 (numbers in this machine's
// byte order):
//   8 bytes  "TROUPECK"
//   u32      format version (1)
//   u64      checkpoint id
//   u64      runner count, then per runner, in slot order:
//              u64 slot, u8 flags (1: it had finished), u64 + bytes: its
//              node's name, u64 + bytes: its node's state
//   u32      CRC-32 (IEEE) of every byte before it
// A file whose checksum or length is wrong is skipped (a torn write from a
// crash cannot happen given the rename, but a disk can still lose blocks);
// a file of another format version stops the graph from starting.
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include "troupe/detail/checkpointer.hpp"
#include "troupe/detail/graph_state.hpp"
#include "troupe/stream/checkpoint.hpp"
#include "troupe/stream/state.hpp"

namespace troupe::detail {

namespace fs = std::filesystem;

namespace {

constexpr char magic[8] = {'T', 'R', 'O', 'U', 'P', 'E', 'C', 'K'};
constexpr std::uint32_t format_version = 1;
constexpr const char* suffix = ".troupe";

std::uint32_t crc32(const char* data, std::size_t n) noexcept {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1U) != 0 ? 0xEDB88320U ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFU;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ static_cast<unsigned char>(data[i])) & 0xFFU] ^ (c >> 8);
  return c ^ 0xFFFFFFFFU;
}

std::string file_name(std::uint64_t id) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "chk-%020llu%s", static_cast<unsigned long long>(id), suffix);
  return buf;
}

/// The id in a checkpoint file's name (0: not one).
std::uint64_t id_of(const fs::path& p) {
  const auto name = p.filename().string();
  const std::string_view sfx{suffix};
  if (name.size() != 4 + 20 + sfx.size() || name.compare(0, 4, "chk-") != 0 || name.compare(24, sfx.size(), sfx) != 0)
    return 0;
  std::uint64_t id = 0;
  for (std::size_t i = 4; i < 24; ++i) {
    if (name[i] < '0' || name[i] > '9') return 0;
    id = id * 10 + static_cast<std::uint64_t>(name[i] - '0');
  }
  return id;
}

[[noreturn]] void fail_io(const std::string& what, const fs::path& p, int err) {
  throw stream::checkpoint_error{"troupe checkpoint: cannot " + what + " " + p.string() + ": " + std::strerror(err)};
}

/// fsync of a file or directory.
void sync_path(const fs::path& p, bool dir) {
  const int fd = ::open(p.c_str(), dir ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) fail_io("open", p, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) fail_io("flush", p, err);
}

/// The checkpoint files in `dir`, oldest first.
std::vector<std::pair<std::uint64_t, fs::path>> checkpoint_files(const fs::path& dir) {
  std::vector<std::pair<std::uint64_t, fs::path>> files;
  std::error_code ec;
  for (fs::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec))
    if (const auto id = id_of(it->path()); id != 0) files.emplace_back(id, it->path());
  if (ec) fail_io("list", dir, ec.value());
  std::sort(files.begin(), files.end());
  return files;
}

struct parsed_slot {
  std::uint64_t slot = 0;
  bool ended = false;
  std::string name;
  std::string state;
};

}  // namespace

void runner_base::restore_state(std::string_view state, bool ended) {
  if (!state.empty())
    throw stream::checkpoint_error{"troupe checkpoint: node '" + name_ + "' (slot " + std::to_string(settings_.slot) +
                                   ") keeps no state, but the checkpoint holds " + std::to_string(state.size()) +
                                   " byte(s) for it: it was written by another graph"};
  restored_ended_ = ended;
}

checkpointer::checkpointer(graph_state& g, stream::checkpoint_options o) : graph_{&g}, opts_{std::move(o)} {
  if (opts_.interval.count() <= 0)
    throw std::invalid_argument{"stream options: checkpoint.interval must be positive, got " +
                                std::to_string(opts_.interval.count()) + " ms"};
  if (opts_.keep == 0) throw std::invalid_argument{"stream options: checkpoint.keep must be at least 1"};
  std::size_t n = 0;
  for (auto& r : g.runners) n = std::max(n, r->settings().slot + 1);
  slots_.resize(n);
  for (auto& r : g.runners) {
    auto& s = slots_[r->settings().slot];
    s.runner = r.get();
    r->set_checkpointer(this);
    if (r->starts_checkpoints()) {
      if (!r->has_state())
        throw std::invalid_argument{"troupe checkpoint: the source '" + r->name() + "' (slot " +
                                    std::to_string(r->settings().slot) +
                                    ") keeps no position (it has no snapshot/restore), so a restarted graph could "
                                    "not replay it; use a replayable source (stream/checkpoint.hpp)"};
    }
  }
  std::error_code ec;
  fs::create_directories(opts_.dir, ec);
  if (ec) fail_io("create the checkpoint directory", opts_.dir, ec.value());
}

checkpointer::~checkpointer() { stop(false); }

void checkpointer::restore() {
  std::error_code ec;
  for (fs::directory_iterator it{opts_.dir, ec}, end; !ec && it != end; it.increment(ec))
    if (const auto& p = it->path(); p.extension() == ".tmp" && p.filename().string().starts_with("chk-"))
      fs::remove(p, ec);  // a write a crash interrupted
  auto files = checkpoint_files(opts_.dir);
  std::reverse(files.begin(), files.end());  // newest first
  for (const auto& [id, path] : files) {
    std::ifstream in{path, std::ios::binary};
    std::string bytes{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
    if (!in.good() && !in.eof()) {
      info_.skipped.push_back(path.string() + ": unreadable");
      continue;
    }
    if (bytes.size() < sizeof magic + 4 || std::memcmp(bytes.data(), magic, sizeof magic) != 0) {
      info_.skipped.push_back(path.string() + ": not a troupe checkpoint (no header)");
      continue;
    }
    std::uint32_t version = 0;
    std::memcpy(&version, bytes.data() + sizeof magic, 4);
    if (version != format_version)
      throw stream::checkpoint_error{"troupe checkpoint: " + path.string() + " is in format version " +
                                     std::to_string(version) + "; this build of troupe reads version " +
                                     std::to_string(format_version) +
                                     " (move the directory away to start the job afresh)"};
    std::uint32_t sum = 0;
    if (bytes.size() >= sizeof magic + 8) std::memcpy(&sum, bytes.data() + bytes.size() - 4, 4);
    if (bytes.size() < sizeof magic + 8 || crc32(bytes.data(), bytes.size() - 4) != sum) {
      info_.skipped.push_back(path.string() + ": corrupt or partial (checksum mismatch), skipped");
      continue;
    }
    stream::state_reader r{std::string_view{bytes}.substr(sizeof magic + 4, bytes.size() - sizeof magic - 8),
                           path.string()};
    std::vector<parsed_slot> parsed;
    if (r.read<std::uint64_t>() != id) r.fail("its id differs from its name");
    const auto n = r.read<std::uint64_t>();
    if (n != slots_.size())
      throw stream::checkpoint_error{"troupe checkpoint: " + path.string() + " was written by another graph (" +
                                     std::to_string(n) + " nodes there, " + std::to_string(slots_.size()) + " here)"};
    parsed.resize(slots_.size());
    for (auto& p : parsed) {
      r.read(p.slot);
      std::uint8_t flags = 0;
      r.read(flags);
      p.ended = (flags & 1U) != 0;
      r.read(p.name);
      p.state = r.read_bytes();
      if (p.slot >= slots_.size() || slots_[p.slot].runner == nullptr) r.fail("a slot out of range");
      if (p.name != slots_[p.slot].runner->name())
        throw stream::checkpoint_error{"troupe checkpoint: " + path.string() + " was written by another graph (slot " +
                                       std::to_string(p.slot) + " is '" + p.name + "' there, '" +
                                       slots_[p.slot].runner->name() + "' here)"};
    }
    if (r.left() != 0) r.fail("bytes after the last node");
    for (auto& p : parsed) {
      auto& s = slots_[p.slot];
      s.runner->restore_state(p.state, p.ended);
      if (p.ended) {
        s.finished = true;
        s.ended = true;
        s.state = std::move(p.state);
      }
    }
    info_.restored = id;
    next_id_ = id + 1;
    completed_.store(id, std::memory_order_release);  // listeners commit what it pre-committed (again)
    return;
  }
}

void checkpointer::start() {
  thread_ = std::thread{[this] { run(); }};
}

void checkpointer::stop(bool clean) noexcept {
  {
    std::lock_guard<std::mutex> lock{mtx_};
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id()) thread_.detach();
    else thread_.join();
  }
  if (!clean) return;
  // The job is done: its checkpoints go (a rerun starts afresh).
  try {
    std::error_code ec;
    for (const auto& f : checkpoint_files(opts_.dir)) fs::remove(f.second, ec);
  } catch (const stream::checkpoint_error&) {
    // A directory that cannot be listed any more: nothing sensible to do at the end.
  }
}

void checkpointer::ack(std::uint64_t id, std::size_t slot, std::string state) {
  std::lock_guard<std::mutex> lock{mtx_};
  if (id != requested_.load(std::memory_order_relaxed) || slot >= slots_.size()) return;
  auto& s = slots_[slot];
  s.state = std::move(state);
  s.acked = id;
  if (all_acked(id)) cv_.notify_all();
}

void checkpointer::finished(std::size_t slot, std::string state, bool clean) {
  std::lock_guard<std::mutex> lock{mtx_};
  if (slot >= slots_.size()) return;
  auto& s = slots_[slot];
  s.finished = true;
  if (clean) {
    s.ended = true;
    s.state = std::move(state);
  } else {
    broken_ = true;
  }
  cv_.notify_all();
}

stream::recovery checkpointer::info() const {
  std::lock_guard<std::mutex> lock{mtx_};
  return info_;
}

bool checkpointer::all_acked(std::uint64_t id) const {
  return std::all_of(slots_.begin(), slots_.end(),
                     [id](const slot_state& s) { return s.runner == nullptr || s.acked == id || s.ended; });
}

void checkpointer::run() {
  std::unique_lock<std::mutex> lock{mtx_};
  while (!stopping_ && !broken_) {
    cv_.wait_for(lock, opts_.interval, [this] { return stopping_ || broken_; });
    if (stopping_ || broken_) break;
    const auto id = next_id_++;
    requested_.store(id, std::memory_order_release);
    for (auto& s : slots_)
      if (s.runner != nullptr && !s.finished && s.runner->starts_checkpoints()) s.runner->wake();
    cv_.wait(lock, [this, id] { return stopping_ || broken_ || all_acked(id); });
    if (stopping_ || broken_) break;
    // The file, while the runners go on (they only wait for the lock to
    // acknowledge the next one).
    std::string bytes{magic, sizeof magic};
    stream::state_writer out{bytes};
    out.write(format_version);
    out.write(id);
    out.write(static_cast<std::uint64_t>(slots_.size()));
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const auto& s = slots_[i];
      out.write(static_cast<std::uint64_t>(i));
      out.write(static_cast<std::uint8_t>(s.ended ? 1 : 0));
      out.write(s.runner != nullptr ? s.runner->name() : std::string{});
      out.write_bytes(s.state);
    }
    out.write(crc32(bytes.data(), bytes.size()));
    lock.unlock();
    try {
      write(id, bytes);
      prune();
    } catch (...) {
      // No checkpoint completes any more: the graph fails with the reason.
      graph_->fail(std::current_exception(),
                   error{errc::checkpoint, "checkpoint " + std::to_string(id) + " could not be written"});
      return;
    }
    lock.lock();
    completed_.store(id, std::memory_order_release);
    for (auto& s : slots_)
      if (s.runner != nullptr && !s.finished && s.runner->hears_checkpoints()) s.runner->wake();
  }
}

void checkpointer::write(std::uint64_t id, const std::string& bytes) const {
  const fs::path dir{opts_.dir};
  const auto final_path = dir / file_name(id);
  auto tmp = final_path;
  tmp += ".tmp";
  {
    std::FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) fail_io("create", tmp, errno);
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() && std::fflush(f) == 0 &&
                    ::fsync(::fileno(f)) == 0;
    const int err = errno;
    std::fclose(f);
    if (!ok) fail_io("write", tmp, err);
  }
  std::error_code ec;
  fs::rename(tmp, final_path, ec);
  if (ec) fail_io("rename", tmp, ec.value());
  sync_path(dir, true);
}

void checkpointer::prune() const {
  const auto files = checkpoint_files(opts_.dir);
  std::error_code ec;
  for (std::size_t i = 0; i + opts_.keep < files.size(); ++i) fs::remove(files[i].second, ec);
}

}  // namespace troupe::detail

// ---- the replayable file source and the exactly-once file sink (stream/checkpoint.hpp)

namespace troupe::stream {

namespace fs = std::filesystem;
using troupe::detail::sync_path;

namespace {

[[noreturn]] void io_error(const std::string& who, const std::string& what, const std::string& path, int err) {
  throw std::runtime_error{"troupe " + who + ": cannot " + what + " " + path + ": " + std::strerror(err)};
}

}  // namespace

file_lines::~file_lines() {
  if (f_ != nullptr) std::fclose(f_);
  std::free(buf_);  // NOLINT(cppcoreguidelines-no-malloc): getline(3) allocates it
}

void file_lines::on_start() {
  f_ = std::fopen(path_.c_str(), "rb");
  if (f_ == nullptr) io_error("file_lines", "open", path_, errno);
  if (offset_ != 0 && ::fseeko(f_, static_cast<off_t>(offset_), SEEK_SET) != 0)
    io_error("file_lines", "seek to byte " + std::to_string(offset_) + " of", path_, errno);
}

bool file_lines::produce() {
  const ssize_t n = ::getline(&buf_, &cap_, f_);
  if (n < 0) {
    if (std::ferror(f_) != 0) io_error("file_lines", "read", path_, errno);
    return false;
  }
  offset_ += static_cast<std::uint64_t>(n);
  std::size_t len = static_cast<std::size_t>(n);
  if (len != 0 && buf_[len - 1] == '\n') --len;
  send_next(std::string{buf_, len});
  return true;
}

file_sink::~file_sink() {
  if (part_ != nullptr) std::fclose(part_);
}

std::string file_sink::target() const {
  return replica_index() == 0 ? path_ : path_ + "." + std::to_string(replica_index());
}
std::string file_sink::part_path(std::uint64_t index) const { return target() + ".part-" + std::to_string(index); }

void file_sink::failed() const { io_error("file_sink", "write", part_path(part_index_), errno); }

void file_sink::open_part() {
  part_ = std::fopen(part_path(part_index_).c_str(), "wb");
  if (part_ == nullptr) io_error("file_sink", "create", part_path(part_index_), errno);
  part_bytes_ = 0;
}

// Pre-commit: the part is on disk.
void file_sink::close_part() {
  if (part_ == nullptr) return;
  const bool ok = std::fflush(part_) == 0 && ::fsync(::fileno(part_)) == 0;
  const int err = errno;
  std::fclose(part_);
  part_ = nullptr;
  if (!ok) io_error("file_sink", "flush", part_path(part_index_), err);
}

// Commit: the part's bytes follow the committed ones in the target. A part
// that is gone was committed before a crash (it is removed only once its
// bytes are on disk in the target).
void file_sink::commit(const part& p) {
  const auto from = part_path(p.index);
  const auto to = target();
  std::error_code ec;
  if (!fs::exists(from, ec)) {
    committed_ += p.bytes;
    return;
  }
  if (committed_ == 0) {
    fs::rename(from, to, ec);
    if (ec) io_error("file_sink", "rename " + from + " to", to, ec.value());
  } else {
    if (::truncate(to.c_str(), static_cast<off_t>(committed_)) != 0) io_error("file_sink", "cut", to, errno);
    std::FILE* in = std::fopen(from.c_str(), "rb");
    if (in == nullptr) io_error("file_sink", "open", from, errno);
    std::FILE* out = std::fopen(to.c_str(), "ab");
    if (out == nullptr) {
      const int err = errno;
      std::fclose(in);
      io_error("file_sink", "open", to, err);
    }
    char buf[1 << 16];
    bool ok = true;
    for (std::size_t n; ok && (n = std::fread(buf, 1, sizeof buf, in)) != 0;) ok = std::fwrite(buf, 1, n, out) == n;
    ok = ok && std::ferror(in) == 0 && std::fflush(out) == 0 && ::fsync(::fileno(out)) == 0;
    const int err = errno;
    std::fclose(in);
    std::fclose(out);
    if (!ok) io_error("file_sink", "append " + from + " to", to, err);
    fs::remove(from, ec);
  }
  sync_path(fs::absolute(to).parent_path(), true);
  committed_ += p.bytes;
}

void file_sink::on_start() {
  const auto to = target();
  const auto dir = fs::absolute(to).parent_path();
  const auto prefix = fs::path{to}.filename().string() + ".part-";
  std::error_code ec;
  if (restored_) {
    // Finish the commits of the checkpoint we resume from, then cut what a
    // later, incomplete one may have left.
    for (const auto& p : pending_) commit(p);
    pending_.clear();
    if (fs::exists(to, ec) && ::truncate(to.c_str(), static_cast<off_t>(committed_)) != 0)
      io_error("file_sink", "cut", to, errno);
  } else {
    committed_ = 0;
    std::FILE* f = std::fopen(to.c_str(), "wb");  // afresh: empty
    if (f == nullptr) io_error("file_sink", "create", to, errno);
    std::fclose(f);
  }
  // Parts of checkpoints that never completed: aborted.
  for (fs::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().starts_with(prefix)) fs::remove(it->path(), ec);
  open_part();
}

void file_sink::on_stop() {
  close_part();
  pending_.push_back(part{0, part_index_, part_bytes_});
  for (const auto& p : pending_) commit(p);
  pending_.clear();
}

void file_sink::snapshot(state_writer& out) {
  if (part_ != nullptr && part_bytes_ != 0) {
    close_part();
    pending_.push_back(part{out.checkpoint(), part_index_, part_bytes_});
    ++part_index_;
    open_part();
  }
  out.write(committed_);
  out.write(part_index_);
  out.write(pending_);
}

void file_sink::restore(state_reader& in) {
  in.read(committed_);
  in.read(part_index_);
  in.read(pending_);
  restored_ = true;
}

void file_sink::on_checkpoint_complete(std::uint64_t id) {
  std::size_t done = 0;
  while (done < pending_.size() && pending_[done].checkpoint <= id) commit(pending_[done++]);
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(done));
}

}  // namespace troupe::stream
