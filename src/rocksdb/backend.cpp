// backend.cpp: troupe::rocksdb (troupe/rocksdb.hpp), keyed state in RocksDB.
#include "troupe/rocksdb.hpp"

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice.h>
#include <rocksdb/table.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>

#include "troupe/stream/state.hpp"

namespace troupe::rocksdb {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& what, const std::string& path, const std::string& why) {
  throw stream::checkpoint_error{"troupe rocksdb: cannot " + what + " " + path + ": " + why};
}

::rocksdb::Slice slice(std::string_view s) noexcept { return {s.data(), s.size()}; }
std::string_view view(const ::rocksdb::Slice& s) noexcept { return {s.data(), s.size()}; }

class table final : public stream::kv_table {
 public:
  table(const options& o, std::string work) : path_{std::move(work)} {
    std::error_code ec;
    fs::create_directories(fs::path{path_}.parent_path(), ec);
    if (ec) fail("create the directory of", path_, ec.message());
    ::rocksdb::Options opt;
    opt.create_if_missing = true;
    opt.write_buffer_size = o.write_buffer_bytes;
    // A value rewritten no larger than it was (a counter, a sum) replaces
    // the memtable's entry instead of adding a version: the memtable keeps
    // one entry per key between flushes, and a look-up stays short
    // (updates of 1000 keys without the cache in front: 9.2 -> 4.5 µs each).
    opt.inplace_update_support = true;
    opt.allow_concurrent_memtable_write = false;
    ::rocksdb::BlockBasedTableOptions t;
    t.block_cache = ::rocksdb::NewLRUCache(o.block_cache_bytes);
    opt.table_factory.reset(::rocksdb::NewBlockBasedTableFactory(t));
    ::rocksdb::DB* db = nullptr;
    const auto s = ::rocksdb::DB::Open(opt, path_, &db);
    if (!s.ok()) fail("open the database", path_, s.ToString());
    db_.reset(db);
    // Recovery comes from checkpoints, which flush first: no log needed.
    write_.disableWAL = true;
  }

  bool get(std::string_view key, std::string& value) override {
    const auto s = db_->Get(read_, slice(key), &value);
    if (s.IsNotFound()) return false;
    if (!s.ok()) fail("read from", path_, s.ToString());
    return true;
  }
  void put(std::string_view key, std::string_view value) override {
    const auto s = db_->Put(write_, slice(key), slice(value));
    if (!s.ok()) fail("write to", path_, s.ToString());
  }
  void erase(std::string_view key) override {
    const auto s = db_->Delete(write_, slice(key));
    if (!s.ok()) fail("delete from", path_, s.ToString());
  }
  void write(const std::vector<change>& changes) override {
    ::rocksdb::WriteBatch batch;
    for (const auto& c : changes) {
      const auto s = c.erase ? batch.Delete(slice(c.key)) : batch.Put(slice(c.key), slice(c.value));
      if (!s.ok()) fail("write to", path_, s.ToString());
    }
    const auto s = db_->Write(write_, &batch);
    if (!s.ok()) fail("write to", path_, s.ToString());
  }
  void scan(const std::function<void(std::string_view, std::string_view)>& f) override {
    std::unique_ptr<::rocksdb::Iterator> it{db_->NewIterator(read_)};
    for (it->SeekToFirst(); it->Valid(); it->Next()) f(view(it->key()), view(it->value()));
    if (!it->status().ok()) fail("read through", path_, it->status().ToString());
  }
  std::string checkpoint(const std::string& dir) override {
    std::error_code ec;
    fs::remove_all(dir, ec);  // a checkpoint of the same id that a crash left unfinished
    fs::create_directories(fs::path{dir}.parent_path(), ec);
    if (ec) fail("create the directory of", dir, ec.message());
    ::rocksdb::Checkpoint* raw = nullptr;
    auto s = ::rocksdb::Checkpoint::Create(db_.get(), &raw);
    std::unique_ptr<::rocksdb::Checkpoint> c{raw};
    // log_size_for_flush 0: always flush the memtable first, so the
    // checkpoint is the table files alone (there is no log to copy).
    if (s.ok()) s = c->CreateCheckpoint(dir, 0);
    if (!s.ok()) fail("take a checkpoint of " + path_ + " into", dir, s.ToString());
    return {};
  }

 private:
  std::string path_;
  std::unique_ptr<::rocksdb::DB> db_;
  ::rocksdb::ReadOptions read_;
  ::rocksdb::WriteOptions write_;
};

class backend_impl final : public stream::state_backend {
 public:
  explicit backend_impl(options o) : o_{o} {}
  std::string name() const override { return "rocksdb"; }
  std::size_t cache_entries() const override { return o_.cache_entries; }
  std::unique_ptr<stream::kv_table> open(const std::string& work) override { return std::make_unique<table>(o_, work); }
  std::unique_ptr<stream::kv_table> restore(const std::string& work, const std::string& dir,
                                            std::string_view /*saved*/) override {
    std::error_code ec;
    fs::remove_all(work, ec);
    fs::create_directories(work, ec);
    if (ec) fail("create", work, ec.message());
    // Table files never change once written: linked (copied where the file
    // system cannot link). The others (CURRENT, MANIFEST, OPTIONS) the
    // database rewrites: copied, so the checkpoint stays as it was.
    for (fs::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec)) {
      const auto& from = it->path();
      const auto to = fs::path{work} / from.filename();
      std::error_code e;
      if (from.extension() == ".sst") fs::create_hard_link(from, to, e);
      if (from.extension() != ".sst" || e) {
        e.clear();
        fs::copy_file(from, to, fs::copy_options::overwrite_existing, e);
      }
      if (e) fail("restore " + from.string() + " into", work, e.message());
    }
    if (ec) fail("read the checkpoint", dir, ec.message());
    return std::make_unique<table>(o_, work);
  }

 private:
  options o_;
};

}  // namespace

std::shared_ptr<stream::state_backend> backend(options o) { return std::make_shared<backend_impl>(o); }

}  // namespace troupe::rocksdb
