// rocksdb.hpp: troupe::rocksdb, keyed state in RocksDB (optional module:
// CMake target troupe::rocksdb, built where Debian's librocksdb-dev is
// installed; scripts/setup installs it).
//   troupe::stream::options o;
//   o.checkpoint = {.dir = "ckpt", .backend = troupe::rocksdb::backend()};
// Each keyed state of each node replica (stream/keyed_state.hpp) is a
// RocksDB database under <checkpoint dir>/work.rank-<r>/, written without
// its write-ahead log (a restart restores from a checkpoint, not from the
// log). At a checkpoint's barrier the node's thread hands its changed keys
// and a checkpoint request to the backend's thread and goes on; that thread
// writes them and takes a RocksDB checkpoint: the memtable is flushed, and
// the checkpoint directory gets hard links to the table files, so a
// checkpoint writes only what changed since the last one (incremental) and
// shares the rest. The checkpoint completes once it is on disk. Restoring
// links the files back into a fresh working database.
//
// Cost: a key not in the cache in front of RocksDB (options::cache_entries)
// is encoded and read from RocksDB (a memtable look-up, then the block
// cache or the disk); changed keys are written back in batches. Use it for
// state larger than memory, or to make checkpoints of a large state cheap
// when little of it changes.
#pragma once

#include <cstddef>
#include <memory>

#include "troupe/stream/keyed_state.hpp"

namespace troupe::rocksdb {

struct options {
  /// Each table's memtable: what is written before a flush to a table file
  /// (a checkpoint flushes it sooner).
  std::size_t write_buffer_bytes = std::size_t{64} << 20;
  /// Each table's block cache for reads of flushed keys.
  std::size_t block_cache_bytes = std::size_t{32} << 20;
  /// Keys each keyed state keeps decoded in memory in front of RocksDB
  /// (state_backend::cache_entries; 0: every access goes to RocksDB).
  /// Changed keys go to RocksDB in one write batch at each checkpoint,
  /// before a scan, and whenever this many are held.
  std::size_t cache_entries = 16384;
};

/// A state backend that keeps keyed state in RocksDB
/// (stream::checkpoint_options::backend).
std::shared_ptr<stream::state_backend> backend(options o = {});

}  // namespace troupe::rocksdb
