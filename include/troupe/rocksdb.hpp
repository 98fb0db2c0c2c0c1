// rocksdb.hpp: troupe::rocksdb, keyed state in RocksDB (optional module:
// CMake target troupe::rocksdb, built where Debian's librocksdb-dev is
// installed; scripts/setup installs it).
//   troupe::stream::options o;
//   o.checkpoint = {.dir = "ckpt", .backend = troupe::rocksdb::backend()};
// Each keyed state of each node replica (stream/keyed_state.hpp) is a
// RocksDB database under <checkpoint dir>/work.rank-<r>/, written without
// its write-ahead log (a restart restores from a checkpoint, not from the
// log). At a checkpoint's barrier the node's thread takes a RocksDB
// checkpoint of it: the memtable is flushed, and the checkpoint directory
// gets hard links to the table files, so a checkpoint writes only what
// changed since the last one (incremental) and shares the rest. Restoring
// links the files back into a fresh working database.
//
// Cost: every access encodes the key and the value and goes through
// RocksDB (a memtable look-up, and the block cache or the disk for keys
// flushed before); use it for state larger than memory, or to make
// checkpoints of a large state cheap when little of it changes.
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
};

/// A state backend that keeps keyed state in RocksDB
/// (stream::checkpoint_options::backend).
std::shared_ptr<stream::state_backend> backend(options o = {});

}  // namespace troupe::rocksdb
