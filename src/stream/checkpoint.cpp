// checkpoint.cpp: the checkpointer of a stream graph (detail/checkpointer.hpp)
// and the checkpoint files.
//
// A checkpoint is one file per rank of the graph (one in all for a graph in
// one process):
//   <dir>/chk-<id, 20 digits>.troupe           rank 0's part; written last, it
//                                              makes the checkpoint complete
//   <dir>/chk-<id, 20 digits>.rank-<r>.troupe  rank r's part (r > 0)
//   <dir>/chk-<id, 20 digits>.rank-<r>.state/  rank r's keyed states in a
//                                              state backend (its checkpoint
//                                              of each table: RocksDB's links)
//   <dir>/work.rank-<r>/                       the backend's live tables
// Each is written as <name>.tmp, flushed to disk, renamed, and the directory
// flushed: a file with the final name is whole. Format version 3 (numbers in
// this machine's byte order; version 2, still read, has no replica numbers):
//   8 bytes  "TROUPECK"
//   u32      format version (3)
//   u64      checkpoint id
//   u32      the rank that wrote it, u32 how many ranks the graph has
//   u64      runner count, then per runner of that rank, in slot order:
//              u64 slot, u8 flags (1: it had finished; 2: elements
//              follow), u32 its replica, u32 its stage's replicas,
//              u64 + bytes: its node's name, u64 + bytes: its
//              runner's state; with flag 2, u64 + bytes: the elements it
//              takes again first (unaligned barriers: u64 count, then each)
//            A runner's state: nothing for a node without state; else u8
//            flags (1: the node's own, u64 + bytes, follows; 2: then its
//            keyed states: u64 count, then per state its name (u64 +
//            bytes) and u64 + bytes: u8 0 (in memory) then u32 key groups,
//            u64 groups used, per group u32 group, u64 entries, each key
//            and value; or u8 1 (a backend) then the table's directory
//            under <dir> and u64 + bytes the backend keeps with it)
//   u32      CRC-32 (IEEE) of every byte before it
// A graph in one process may resume with other replica counts: a stage
// (a run of slots holding replicas 0 .. n-1 of one node) whose count changed
// gets, in every new replica, the keyed states of all its old replicas, of
// which each keeps its own key groups; a stage that kept the node's own state
// (snapshot/restore) or had finished cannot change its count.
// A restart takes the newest checkpoint whose files, every rank's, are
// whole; a file whose checksum or length is wrong is skipped (a torn write
// from a crash cannot happen given the rename, but a disk can still lose
// blocks), and so is a checkpoint with a rank's file missing. A file of
// another format version, or of a graph with another number of ranks,
// stops the graph from starting.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

#include "troupe/actor/actor_system.hpp"
#include "troupe/detail/checkpointer.hpp"
#include "troupe/detail/graph_state.hpp"
#include "troupe/ext/edges.hpp"
#include "troupe/ext/owned_cell.hpp"
#include "troupe/stream/checkpoint.hpp"
#include "troupe/stream/keyed_state.hpp"
#include "troupe/stream/state.hpp"

namespace troupe::detail {

namespace fs = std::filesystem;

namespace {

constexpr char magic[8] = {'T', 'R', 'O', 'U', 'P', 'E', 'C', 'K'};
constexpr std::uint32_t format_version = 3;
constexpr std::uint32_t oldest_version = 2;                        // read too (no replica numbers: no rescaling)
constexpr std::size_t header_size = sizeof magic + 4 + 8 + 4 + 4;  // up to the runner count
constexpr const char* suffix = ".troupe";

/// CRC-32 (IEEE), zlib's (see CMakeLists.txt for why).
std::uint32_t checksum(const char* data, std::size_t n) noexcept {
  uLong c = ::crc32(0L, Z_NULL, 0);
  while (n != 0) {  // zlib takes lengths as uInt
    const auto part = static_cast<uInt>(std::min<std::size_t>(n, 1U << 30));
    c = ::crc32(c, reinterpret_cast<const Bytef*>(data), part);
    data += part;
    n -= part;
  }
  return static_cast<std::uint32_t>(c);
}

/// What follows the id in the name of a file of `rank`.
std::string tail_of(std::size_t rank) {
  return rank == 0 ? std::string{suffix} : ".rank-" + std::to_string(rank) + suffix;
}
/// What follows the id in the name of a directory of `rank`'s backend files.
std::string state_tail(std::size_t rank) { return ".rank-" + std::to_string(rank) + ".state"; }

std::string id_part(std::uint64_t id) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "chk-%020llu", static_cast<unsigned long long>(id));
  return buf;
}

std::string file_name(std::uint64_t id, std::size_t rank) { return id_part(id) + tail_of(rank); }

/// The id in the name `chk-<id>` + `tail` (0: not such a name).
std::uint64_t id_in(const std::string& name, const std::string& tail) {
  if (name.size() != 4 + 20 + tail.size() || name.compare(0, 4, "chk-") != 0 ||
      name.compare(24, tail.size(), tail) != 0)
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

/// The checkpoint files of `rank` in `dir`, oldest first (none if there is
/// no such directory); `state_dirs`: the directories of its backend files.
std::vector<std::pair<std::uint64_t, fs::path>> checkpoint_files(const fs::path& dir, std::size_t rank,
                                                                 bool state_dirs = false) {
  std::vector<std::pair<std::uint64_t, fs::path>> files;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return files;
  const auto tail = state_dirs ? state_tail(rank) : tail_of(rank);
  for (fs::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec))
    if (const auto id = id_in(it->path().filename().string(), tail); id != 0) files.emplace_back(id, it->path());
  if (ec) fail_io("list", dir, ec.value());
  std::sort(files.begin(), files.end());
  return files;
}

/// A checkpoint file, read and checked.
struct checkpoint_file {
  fs::path path;
  std::string bytes;
  std::uint64_t id = 0;
  std::uint32_t rank = 0, ranks = 0, version = 0;
  /// Its runners (after the header, before the checksum).
  std::string_view runners() const {
    return std::string_view{bytes}.substr(header_size, bytes.size() - header_size - 4);
  }
};

/// Throws: the checkpoint file `path` does not fit this graph, for `why`.
[[noreturn]] void another_graph(const std::string& path, const std::string& why) {
  throw stream::checkpoint_error{"troupe checkpoint: " + path + " was written by another graph (" + why + ")"};
}

/// Reads `p` into `f`: "" if it is whole, else why it is not usable. Throws
/// checkpoint_error for a file of another format version.
std::string load(const fs::path& p, checkpoint_file& f) {
  f.path = p;
  // One read of the whole file (an istreambuf_iterator took 500 ms for 100 MB, this 190).
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? "missing" : std::string{"unreadable: "} + std::strerror(errno);
  struct stat st{};
  bool ok = ::fstat(fd, &st) == 0;
  if (ok) f.bytes.resize(static_cast<std::size_t>(st.st_size));
  for (std::size_t at = 0; ok && at < f.bytes.size();) {
    const auto n = ::read(fd, f.bytes.data() + at, f.bytes.size() - at);
    if (n > 0) at += static_cast<std::size_t>(n);
    else if (n == 0) f.bytes.resize(at);  // shorter than it was: the checksum says so
    else ok = errno == EINTR;
  }
  const int err = errno;
  ::close(fd);
  if (!ok) return std::string{"unreadable: "} + std::strerror(err);
  const auto& b = f.bytes;
  if (b.size() < sizeof magic + 4 || std::memcmp(b.data(), magic, sizeof magic) != 0)
    return "not a troupe checkpoint (no header)";
  std::uint32_t version = 0;
  std::memcpy(&version, b.data() + sizeof magic, 4);
  if (version < oldest_version || version > format_version)
    throw stream::checkpoint_error{"troupe checkpoint: " + p.string() + " is in format version " +
                                   std::to_string(version) + "; this build of troupe reads versions " +
                                   std::to_string(oldest_version) + " to " + std::to_string(format_version) +
                                   " (move the directory away to start the job afresh)"};
  f.version = version;
  std::uint32_t sum = 0;
  if (b.size() >= header_size + 8 + 4) std::memcpy(&sum, b.data() + b.size() - 4, 4);
  if (b.size() < header_size + 8 + 4 || checksum(b.data(), b.size() - 4) != sum)
    return "corrupt or partial (checksum mismatch), skipped";
  std::memcpy(&f.id, b.data() + sizeof magic + 4, 8);
  std::memcpy(&f.rank, b.data() + sizeof magic + 12, 4);
  std::memcpy(&f.ranks, b.data() + sizeof magic + 16, 4);
  return {};
}

/// The checkpoint a rank resumes from: the newest whose files are all
/// whole (id 0: none), its file of that rank, and why newer ones are not.
struct choice {
  std::uint64_t id = 0;
  checkpoint_file mine;
  std::vector<std::string> skipped;
};

choice choose(const fs::path& dir, std::size_t rank, std::size_t ranks) {
  choice c;
  auto complete = checkpoint_files(dir, 0);  // rank 0's files: each completes its checkpoint
  std::reverse(complete.begin(), complete.end());
  for (const auto& [id, path] : complete) {
    checkpoint_file first;
    auto why = load(path, first);
    if (why.empty() && (first.id != id || first.rank != 0)) why = "its header names another checkpoint";
    if (!why.empty()) {
      c.skipped.push_back(path.string() + ": " + why);
      continue;
    }
    if (first.ranks != ranks)
      throw stream::checkpoint_error{"troupe checkpoint: " + path.string() + " was written by a graph split over " +
                                     std::to_string(first.ranks) + " rank(s); this one has " + std::to_string(ranks) +
                                     " (move the directory away to start the job afresh)"};
    bool whole = true;
    checkpoint_file mine;
    for (std::size_t r = 1; r < ranks && whole; ++r) {
      checkpoint_file f;
      const auto p = dir / file_name(id, r);
      auto w = load(p, f);
      if (w.empty() && (f.id != id || f.rank != r || f.ranks != ranks)) w = "its header names another checkpoint";
      if (!w.empty()) {
        c.skipped.push_back("checkpoint " + std::to_string(id) + ": " + p.string() + ": " + w);
        whole = false;
      } else if (r == rank) {
        mine = std::move(f);
      }
    }
    if (!whole) continue;
    c.id = id;
    c.mine = rank == 0 ? std::move(first) : std::move(mine);
    return c;
  }
  return c;
}

/// The actor a split graph's checkpointers talk through: its mail wakes
/// the checkpointer's thread.
class checkpoint_cell final : public ext::owned_cell {
 public:
  checkpoint_cell(actor_system& sys, std::shared_ptr<checkpointer::mailbox> m) : owned_cell{sys}, box_{std::move(m)} {}

 private:
  void notify() noexcept override;
  std::shared_ptr<checkpointer::mailbox> box_;
};

}  // namespace

/// Between the cell (any thread) and a checkpointer that may have stopped.
struct checkpointer::mailbox {
  std::mutex mtx;
  checkpointer* owner = nullptr;
};

namespace {
void checkpoint_cell::notify() noexcept {
  std::lock_guard<std::mutex> g{box_->mtx};
  if (box_->owner != nullptr) box_->owner->mail_arrived();
}
}  // namespace

void runner_base::restore_state(std::string_view state, bool ended, std::string_view inflight) {
  if (!inflight.empty())
    throw stream::checkpoint_error{"troupe checkpoint: node '" + name_ + "' (slot " + std::to_string(settings_.slot) +
                                   ") takes no elements again, but the checkpoint holds " +
                                   std::to_string(inflight.size()) +
                                   " byte(s) of them: it was written by another graph"};
  if (!state.empty())
    throw stream::checkpoint_error{"troupe checkpoint: node '" + name_ + "' (slot " + std::to_string(settings_.slot) +
                                   ") keeps no state, but the checkpoint holds " + std::to_string(state.size()) +
                                   " byte(s) for it: it was written by another graph"};
  restored_ended_ = ended;
}

checkpointer::checkpointer(graph_state& g, stream::checkpoint_options o, ext::peers* peers, std::string name)
    : graph_{&g}, opts_{std::move(o)}, peers_{peers}, name_{std::move(name)} {
  if (opts_.interval.count() <= 0)
    throw std::invalid_argument{"stream options: checkpoint.interval must be positive, got " +
                                std::to_string(opts_.interval.count()) + " ms"};
  if (opts_.keep == 0) throw std::invalid_argument{"stream options: checkpoint.keep must be at least 1"};
  if (peers_ != nullptr) {
    rank_ = peers_->rank();
    ranks_ = peers_->size();
  }
  std::size_t n = 0;
  for (auto& r : g.runners)
    if (r->checkpointed()) n = std::max(n, r->settings().slot + 1);
  slots_.resize(n);
  for (auto& r : g.runners) {
    if (!r->checkpointed()) continue;  // an edge between ranks
    auto& s = slots_[r->settings().slot];
    s.runner = r.get();
    r->set_checkpointer(this, ranks_ == 1);
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
  // Keyed states: a backend works in work.rank-<r>/slot-<s> (what a crashed
  // run left there goes: a restart restores from the checkpoint's copy).
  const auto work = fs::path{opts_.dir} / ("work.rank-" + std::to_string(rank_));
  if (opts_.backend) {
    fs::remove_all(work, ec);
    if (ec) fail_io("remove the old working files", work, ec.value());
  }
  for (std::size_t i = 0; i < slots_.size(); ++i)
    if (slots_[i].runner != nullptr) bind_keyed(i, false);
  if (peers_ != nullptr) connect();
}

void checkpointer::bind_keyed(std::size_t slot, bool rescaled) {
  auto* r = slots_[slot].runner;
  const auto work = fs::path{opts_.dir} / ("work.rank-" + std::to_string(rank_)) / ("slot-" + std::to_string(slot));
  r->bind_keyed(stream::detail::keyed_env{.backend = opts_.backend.get(),
                                          .work = work.string(),
                                          .dir = opts_.dir,
                                          .rank = rank_,
                                          .slot = slot,
                                          .replica = r->settings().replica,
                                          .replicas = r->settings().replicas,
                                          .rescaled = rescaled});
}

// Before the graph starts, as its edges find each other's inlets: rank 0's
// actor becomes findable, and every other rank finds it (blocking up to the
// peers' connect timeout) and says where its own is. Mail that comes before
// start() waits in the mailbox (mail_ starts raised).
void checkpointer::connect() {
  mailbox_ = std::make_shared<mailbox>();
  auto* cell = new checkpoint_cell{*graph_->sys, mailbox_};
  cell_ = cell;
  self_ = cell->adopt();
  try {
    if (rank_ == 0) {
      peer_.resize(ranks_);
      peers_->publish(self_, name_ + "/checkpoints");
    } else {
      coordinator_ = peers_->find(0, name_ + "/checkpoints");
      graph_->sys->send(coordinator_, ext::checkpoint_hello{}, static_cast<std::uint64_t>(rank_), self_);
    }
  } catch (...) {
    cell_->end(error{});
    throw;
  }
}

checkpointer::~checkpointer() { stop(false); }

stream::recovery checkpointer::find(const std::string& dir, std::size_t rank, std::size_t ranks) {
  auto c = choose(dir, rank, ranks);
  return stream::recovery{c.id, std::move(c.skipped)};
}

/// A runner as a checkpoint file has it (state and elements: in its bytes).
struct checkpointer::saved_runner {
  std::uint64_t slot = 0;
  bool ended = false;
  std::uint32_t replica = 0, replicas = 1;
  std::string name;
  std::string_view state, inflight;
};

void checkpointer::restore() {
  const fs::path dir{opts_.dir};
  std::error_code ec;
  for (fs::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec))
    if (const auto& p = it->path(); p.extension() == ".tmp" && id_in(p.stem().string(), tail_of(rank_)) != 0)
      fs::remove(p, ec);  // a write of this rank's that a crash interrupted
  auto c = choose(dir, rank_, ranks_);
  info_.skipped = std::move(c.skipped);
  // This rank's files of checkpoints after the one it resumes from never
  // completed: they go, so that a new checkpoint of the same id is not
  // mixed with them (no rank writes before every rank has chosen: the
  // first checkpoint of this run completes only once all have started).
  for (const auto& [id, path] : checkpoint_files(dir, rank_))
    if (id > c.id) fs::remove(path, ec);
  // Backend files of a checkpoint this rank has no file of (any more) go too.
  for (const auto& [id, path] : checkpoint_files(dir, rank_, true))
    if (id > c.id || !fs::exists(dir / file_name(id, rank_), ec)) fs::remove_all(path, ec);
  if (c.id == 0) return;
  const auto& file = c.mine;
  stream::state_reader r{file.runners(), file.path.string()};
  const auto local = static_cast<std::uint64_t>(
      std::count_if(slots_.begin(), slots_.end(), [](const slot_state& s) { return s.runner != nullptr; }));
  const auto n = r.read<std::uint64_t>();
  if (n > r.left()) r.fail("more nodes than bytes");
  const bool numbered = file.version >= 3;  // replica numbers in the file
  std::vector<saved_runner> parsed(n);
  for (auto& p : parsed) {
    r.read(p.slot);
    std::uint8_t flags = 0;
    r.read(flags);
    p.ended = (flags & 1U) != 0;
    if (numbered) {
      p.replica = r.read<std::uint32_t>();
      p.replicas = r.read<std::uint32_t>();
    }
    r.read(p.name);
    p.state = r.view_bytes();
    if ((flags & 2U) != 0) p.inflight = r.view_bytes();
  }
  if (r.left() != 0) r.fail("bytes after the last node");
  const auto another = [&](const std::string& why) { another_graph(file.path.string(), why); };
  // The same graph: slot by slot.
  const auto same = [&](const saved_runner& p) {
    const auto* x = p.slot < slots_.size() ? slots_[p.slot].runner : nullptr;
    return x != nullptr && p.name == x->name() &&
           (!numbered || (p.replica == x->settings().replica && p.replicas == x->settings().replicas));
  };
  if (n == local && std::all_of(parsed.begin(), parsed.end(), same)) {
    for (const auto& p : parsed) restore_slot(p.slot, p.state, p.ended, p.inflight);
  } else if (!numbered || ranks_ > 1) {
    if (n != local) another(std::to_string(n) + " nodes there, " + std::to_string(local) + " here");
    for (const auto& p : parsed) {
      if (p.slot >= slots_.size() || slots_[p.slot].runner == nullptr) r.fail("a slot out of range");
      if (p.name != slots_[p.slot].runner->name())
        another("slot " + std::to_string(p.slot) + " is '" + p.name + "' there, '" + slots_[p.slot].runner->name() +
                "' here");
    }
    another("its stages have other numbers of replicas; a graph split across processes resumes with the same ones");
  } else {
    rescale(file.path.string(), parsed, c.id);
  }
  info_.restored = c.id;
  next_id_ = c.id + 1;
  written_ = c.id;
  completed_.store(c.id, std::memory_order_release);  // listeners commit what it pre-committed (again)
}

void checkpointer::restore_slot(std::size_t slot, std::string_view state, bool ended, std::string_view inflight) {
  auto& s = slots_[slot];
  s.runner->restore_state(state, ended, inflight);
  if (ended) {
    s.finished = true;
    s.ended = true;
    s.final_state = std::string{state};
  }
}

namespace {

/// A graph's stages in slot order (a stage: a run of slots holding replicas
/// 0 .. n-1 of one node, in some order): per stage, its slots by replica
/// (indices into `name`, `replica`, `replicas`). Empty if they do not
/// form stages.
template <class Name, class Replica, class Replicas>
std::vector<std::vector<std::size_t>> stages_of(std::size_t n, Name&& name, Replica&& replica, Replicas&& replicas) {
  std::vector<std::vector<std::size_t>> stages;
  for (std::size_t i = 0; i < n;) {
    const auto count = replicas(i);
    if (count == 0 || i + count > n) return {};
    std::vector<std::size_t> by_replica(count, n);
    for (std::size_t j = i; j < i + count; ++j) {
      const auto k = replica(j);
      if (name(j) != name(i) || replicas(j) != count || k >= count || by_replica[k] != n) return {};
      by_replica[k] = j;
    }
    stages.push_back(std::move(by_replica));
    i += count;
  }
  return stages;
}

}  // namespace

void checkpointer::rescale(const std::string& path, const std::vector<saved_runner>& saved, std::uint64_t id) {
  const auto another = [&](const std::string& why) { another_graph(path, why); };
  const auto old = stages_of(
      saved.size(), [&](std::size_t i) -> const std::string& { return saved[i].name; },
      [&](std::size_t i) { return std::size_t{saved[i].replica}; },
      [&](std::size_t i) { return std::size_t{saved[i].replicas}; });
  const auto runner = [&](std::size_t i) { return slots_[i].runner; };
  const auto now = stages_of(
      slots_.size(), [&](std::size_t i) -> const std::string& { return runner(i)->name(); },
      [&](std::size_t i) { return runner(i)->settings().replica; },
      [&](std::size_t i) { return runner(i)->settings().replicas; });
  if (old.empty() || now.empty()) another("its nodes do not form the same stages as this graph's");
  if (old.size() != now.size())
    another(std::to_string(old.size()) + " stages there, " + std::to_string(now.size()) + " here");
  for (std::size_t k = 0; k < old.size(); ++k) {
    const auto& was = saved[old[k].front()];
    const auto& name = runner(now[k].front())->name();
    if (was.name != name) another("stage " + std::to_string(k) + " is '" + was.name + "' there, '" + name + "' here");
  }
  for (std::size_t k = 0; k < old.size(); ++k) {
    const auto& from = old[k];
    const auto& to = now[k];
    if (from.size() == to.size()) {
      for (std::size_t j = 0; j < to.size(); ++j) {
        const auto& p = saved[from[j]];
        restore_slot(to[j], p.state, p.ended, p.inflight);
      }
      continue;
    }
    // Another replica count: every new replica gets every old replica's
    // keyed states and keeps its own key groups (keyed_state::load).
    const auto& name = saved[from.front()].name;
    const auto refuse = [&](const std::string& why) {
      std::string m = "troupe checkpoint: cannot resume '";
      m += name;
      m += "' with " + std::to_string(to.size()) + " replicas from checkpoint " + std::to_string(id);
      m += ", taken with " + std::to_string(from.size()) + ": ";
      m += why;
      m += " (resume with its " + std::to_string(from.size()) + " replicas)";
      throw stream::checkpoint_error{m};
    };
    std::string what = path;
    what += ": node '";
    what += name;
    what += "'";
    std::string parts;
    stream::state_writer w{parts};
    std::uint64_t count = 0;
    for (const auto i : from) {
      const auto& p = saved[i];
      if (p.ended) refuse("replica " + std::to_string(p.replica) + " had finished");
      if (!p.inflight.empty()) refuse("the checkpoint holds elements in flight to it (unaligned barriers)");
      if (p.state.empty()) continue;
      stream::state_reader in{p.state, what};
      const auto flags = in.read<std::uint8_t>();
      if ((flags & 1U) != 0)
        refuse("it keeps its node's own state (snapshot/restore), which cannot be split; keyed state (keyed()) can");
      if ((flags & 2U) == 0) continue;
      for (auto states = in.read<std::uint64_t>(); states != 0; --states, ++count) {
        w.write(in.read<std::string>());
        w.write_bytes(in.view_bytes());
      }
      if (in.left() != 0) in.fail("bytes after its keyed states");
    }
    std::string state;
    if (count != 0) {
      stream::state_writer s{state};
      s.write(std::uint8_t{2});
      s.write(count);
      state += parts;
    }
    for (const auto slot : to) {
      bind_keyed(slot, true);
      restore_slot(slot, state, false, {});
    }
    info_.rescaled.push_back("'" + name + "': " + std::to_string(from.size()) + " -> " + std::to_string(to.size()) +
                             " replicas");
  }
}

void checkpointer::start() {
  // The graph may have ended already (every node failed at once) and
  // stopped this checkpointer from a worker: then nothing starts. The
  // mailbox's lock is never taken inside mtx_ (its cell takes mtx_ inside it).
  const auto stopped = [this] {
    std::lock_guard<std::mutex> lock{mtx_};
    return stopping_;
  };
  const auto own_mail = [this](checkpointer* owner) {
    if (!mailbox_) return;
    std::lock_guard<std::mutex> g{mailbox_->mtx};
    mailbox_->owner = owner;
  };
  if (stopped()) return;
  own_mail(this);
  std::exception_ptr failed;
  bool ended = false;
  {
    std::lock_guard<std::mutex> lock{mtx_};
    ended = stopping_;
    if (!ended) {
      try {
        thread_ = std::thread{[this] { run(); }};
      } catch (...) {
        failed = std::current_exception();
      }
    }
  }
  if (ended) own_mail(nullptr);  // stop() ran meanwhile
  if (failed) graph_->fail(failed, error{errc::checkpoint, "the checkpoints could not start"});
}

void checkpointer::stop(bool clean) noexcept {
  std::thread t;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock{mtx_};
    first = !stopping_;
    stopping_ = true;
    t = std::move(thread_);  // under the lock: start() may be assigning it
  }
  cv_.notify_all();
  if (t.joinable()) {
    if (t.get_id() == std::this_thread::get_id()) t.detach();
    else t.join();
  }
  if (mailbox_) {
    {
      std::lock_guard<std::mutex> g{mailbox_->mtx};
      mailbox_->owner = nullptr;
    }
    if (first) cell_->end(error{});
  }
  if (!first || !clean) return;
  if (!commit_at_end()) return;  // the files stay: a rerun finishes the commits
  // This rank's part of the job is done: its checkpoints go (a rerun starts
  // afresh: with one rank's files gone, no checkpoint is whole any more).
  try {
    std::error_code ec;
    for (const auto& f : checkpoint_files(opts_.dir, rank_)) fs::remove(f.second, ec);
    for (const auto& f : checkpoint_files(opts_.dir, rank_, true)) fs::remove_all(f.second, ec);
    fs::remove_all(fs::path{opts_.dir} / ("work.rank-" + std::to_string(rank_)), ec);
  } catch (const stream::checkpoint_error&) {
    // A directory that cannot be listed any more: nothing sensible to do at the end.
  }
}

bool checkpointer::commit_at_end() noexcept {
  // Nodes that commit with checkpoints (a sink publishing what each one
  // holds) commit the end of the stream with a last checkpoint, taken when
  // every node has ended: stored first, then heard. Killed before it is
  // stored, a rerun resumes from the one before and nothing of the end was
  // committed; after, a rerun resumes from it, every node ended, and the
  // commits are heard again. (One process only: a split graph's ranks end
  // each on their own, and commit at on_stop.)
  if (ranks_ != 1) return true;
  if (std::none_of(slots_.begin(), slots_.end(),
                   [](const slot_state& s) { return s.runner != nullptr && s.runner->hears_checkpoints(); }))
    return true;
  std::uint64_t id = 0;
  try {
    std::string bytes;
    {
      std::lock_guard<std::mutex> lock{mtx_};
      id = std::max({next_id_, requested_.load() + 1, completed_.load() + 1});
      bytes = serialize(id);
    }
    write(id, bytes);
  } catch (...) {
    write_failed(id);
    return false;
  }
  bool heard = true;
  for (auto& s : slots_)
    if (s.runner != nullptr && s.runner->hears_checkpoints()) heard = s.runner->hear_final_checkpoint(id) && heard;
  return heard;
}

void checkpointer::mail_arrived() noexcept {
  {
    std::lock_guard<std::mutex> lock{mtx_};
    mail_ = true;
  }
  cv_.notify_all();
}

void checkpointer::begin(std::uint64_t id) {
  if (id <= requested_.load(std::memory_order_relaxed)) return;
  began_ = std::chrono::steady_clock::now();
  requested_.store(id, std::memory_order_release);
  for (auto& s : slots_)
    if (s.runner != nullptr && !s.finished && s.runner->starts_checkpoints()) s.runner->wake();
}

void checkpointer::complete(std::uint64_t id) {
  if (id <= completed_.load(std::memory_order_relaxed)) return;
  completed_.store(id, std::memory_order_release);
  ++stats_.completed;
  stats_.last_id = id;
  stats_.last_duration = std::chrono::steady_clock::now() - began_;
  stats_.max_duration = std::max(stats_.max_duration, stats_.last_duration);
  stats_.total_duration += stats_.last_duration;
  stats_.last_bytes = bytes_;
  for (auto& s : slots_)
    if (s.runner != nullptr && !s.finished && s.runner->hears_checkpoints()) s.runner->wake();
}

void checkpointer::ack(std::uint64_t id, std::size_t slot, std::string state, std::string inflight) {
  std::lock_guard<std::mutex> lock{mtx_};
  if (id < requested_.load(std::memory_order_relaxed) || slot >= slots_.size()) return;
  begin(id);  // a barrier from another rank came before its trigger
  auto& s = slots_[slot];
  s.state = std::move(state);
  s.inflight = std::move(inflight);
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
    s.final_state = std::move(state);
  } else {
    broken_ = true;
  }
  cv_.notify_all();
}

stream::recovery checkpointer::info() const {
  std::lock_guard<std::mutex> lock{mtx_};
  return info_;
}

stream::checkpoint_stats checkpointer::stats() const {
  std::lock_guard<std::mutex> lock{mtx_};
  return stats_;
}

std::string checkpointer::last_completed() const {
  const auto id = completed();
  if (id == 0) return "; no checkpoint had completed (a rerun starts afresh)";
  return "; the last completed checkpoint is " + std::to_string(id) + " in " + opts_.dir +
         " (rerun every rank to resume from it)";
}

bool checkpointer::all_acked(std::uint64_t id) const {
  return std::all_of(slots_.begin(), slots_.end(),
                     [id](const slot_state& s) { return s.runner == nullptr || s.acked == id || s.ended; });
}

template <class Pred>
bool checkpointer::await(std::unique_lock<std::mutex>& lock, Pred pred, std::chrono::steady_clock::time_point until) {
  for (;;) {
    if (stopping_ || broken_) return false;
    if (mail_) {
      mail_ = false;
      handle_mail();
      continue;
    }
    if (pred()) return true;
    if (until == std::chrono::steady_clock::time_point::max()) cv_.wait(lock);
    else cv_.wait_until(lock, until);
  }
}

void checkpointer::handle_mail() {
  if (cell_ == nullptr) return;  // a graph in one process
  cell_->drain([this](message& m) {
    if (m.match<ext::checkpoint_trigger, std::uint64_t>()) {
      begin(std::get<1>(m.get<ext::checkpoint_trigger, std::uint64_t>()));
    } else if (m.match<ext::checkpoint_complete, std::uint64_t>()) {
      complete(std::get<1>(m.get<ext::checkpoint_complete, std::uint64_t>()));
    } else if (m.match<ext::checkpoint_done, std::uint64_t, std::uint64_t>()) {
      auto& [a, r, id] = m.get<ext::checkpoint_done, std::uint64_t, std::uint64_t>();
      if (r < peer_.size()) peer_[r].done = std::max(peer_[r].done, id);
    } else if (m.match<ext::checkpoint_hello, std::uint64_t, actor>()) {
      auto& [a, r, who] = m.get<ext::checkpoint_hello, std::uint64_t, actor>();
      if (r < peer_.size() && r != 0) peer_[r].handle = who;
    } else {
      count_dead_letter(*graph_->sys);
    }
  });
}

void checkpointer::run() {
  std::unique_lock<std::mutex> lock{mtx_};
  if (rank_ == 0) coordinate(lock);
  else follow(lock);
}

void checkpointer::coordinate(std::unique_lock<std::mutex>& lock) {
  const auto others = [this] { return peer_.size() > 1 ? peer_.begin() + 1 : peer_.end(); };
  // Every other rank says where its checkpointer is.
  if (!await(lock,
             [&] { return std::all_of(others(), peer_.end(), [](const rank_state& p) { return bool{p.handle}; }); }))
    return;
  for (;;) {
    const auto due = std::chrono::steady_clock::now() + opts_.interval;  // from the end of the last one
    if (!await(lock, [due] { return std::chrono::steady_clock::now() >= due; }, due)) return;
    const auto id = next_id_++;
    begin(id);
    lock.unlock();  // (a rank of this process may be sending to this one meanwhile)
    for (auto it = others(); it != peer_.end(); ++it) graph_->sys->send(it->handle, ext::checkpoint_trigger{}, id);
    lock.lock();
    if (!await(lock, [&] { return all_acked(id); })) return;
    // The file, while the runners go on (they only wait for the lock to
    // acknowledge the next one), once every other rank has its part.
    const auto bytes = serialize(id);
    bytes_ = bytes.size();
    if (!await(lock,
               [&] { return std::all_of(others(), peer_.end(), [id](const rank_state& p) { return p.done >= id; }); }))
      return;
    lock.unlock();
    try {
      write(id, bytes);
      prune(id);
    } catch (...) {
      write_failed(id);
      return;
    }
    for (auto it = others(); it != peer_.end(); ++it) graph_->sys->send(it->handle, ext::checkpoint_complete{}, id);
    lock.lock();
    complete(id);
  }
}

void checkpointer::follow(std::unique_lock<std::mutex>& lock) {
  std::uint64_t pruned = completed_.load(std::memory_order_relaxed);
  for (;;) {
    const auto ready = [&] {
      const auto id = requested_.load(std::memory_order_relaxed);
      return (id > written_ && all_acked(id)) || completed_.load(std::memory_order_relaxed) > pruned;
    };
    if (!await(lock, ready)) return;
    if (const auto done = completed_.load(std::memory_order_relaxed); done > pruned) {
      pruned = done;
      lock.unlock();
      try {
        prune(done);
      } catch (const stream::checkpoint_error&) {  // NOLINT(bugprone-empty-catch): the next one tries again
      }
      lock.lock();
      continue;
    }
    const auto id = requested_.load(std::memory_order_relaxed);
    const auto bytes = serialize(id);
    bytes_ = bytes.size();
    lock.unlock();
    try {
      write(id, bytes);
    } catch (...) {
      write_failed(id);
      return;
    }
    graph_->sys->send(coordinator_, ext::checkpoint_done{}, static_cast<std::uint64_t>(rank_), id);
    lock.lock();
    written_ = id;
  }
}

std::string checkpointer::serialize(std::uint64_t id) const {
  std::string bytes{magic, sizeof magic};
  stream::state_writer out{bytes};
  out.write(format_version);
  out.write(id);
  out.write(static_cast<std::uint32_t>(rank_));
  out.write(static_cast<std::uint32_t>(ranks_));
  out.write(static_cast<std::uint64_t>(
      std::count_if(slots_.begin(), slots_.end(), [](const slot_state& s) { return s.runner != nullptr; })));
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const auto& s = slots_[i];
    if (s.runner == nullptr) continue;  // another rank's
    const bool ended = s.ended_in(id);
    const bool inflight = !ended && !s.inflight.empty();
    out.write(static_cast<std::uint64_t>(i));
    out.write(static_cast<std::uint8_t>((ended ? 1 : 0) | (inflight ? 2 : 0)));
    out.write(static_cast<std::uint32_t>(s.runner->settings().replica));
    out.write(static_cast<std::uint32_t>(s.runner->settings().replicas));
    out.write(s.runner->name());
    out.write_bytes(ended ? s.final_state : s.state);
    if (inflight) out.write_bytes(s.inflight);
  }
  out.write(checksum(bytes.data(), bytes.size()));
  return bytes;
}

void checkpointer::write_failed(std::uint64_t id) noexcept {
  // No checkpoint completes any more: the graph fails with the reason.
  graph_->fail(std::current_exception(),
               error{errc::checkpoint, "checkpoint " + std::to_string(id) + " could not be written"});
}

void checkpointer::write(std::uint64_t id, const std::string& bytes) const {
  if (opts_.backend) opts_.backend->wait_saved();  // its tables' parts of `id` first
  const fs::path dir{opts_.dir};
  const auto final_path = dir / file_name(id, rank_);
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

void checkpointer::prune(std::uint64_t upto) const {
  std::error_code ec;
  for (const auto& [id, path] : checkpoint_files(opts_.dir, rank_))
    if (id + opts_.keep <= upto) fs::remove(path, ec);
  for (const auto& [id, path] : checkpoint_files(opts_.dir, rank_, true))
    if (id + opts_.keep <= upto) fs::remove_all(path, ec);
}

}  // namespace troupe::detail

// ---- the replayable file source and the exactly-once file sink (stream/checkpoint.hpp)

namespace troupe::stream {

namespace fs = std::filesystem;
using troupe::detail::sync_path;

recovery checkpoint_to_resume(const std::string& dir, std::size_t rank, std::size_t ranks) {
  return troupe::detail::checkpointer::find(dir, rank, ranks);
}

std::string detail::state_dir(std::uint64_t id, std::size_t rank) {
  return troupe::detail::id_part(id) + troupe::detail::state_tail(rank);
}

void detail::remove_dir(const std::string& path) noexcept {
  std::error_code ec;
  fs::remove_all(path, ec);
}

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
