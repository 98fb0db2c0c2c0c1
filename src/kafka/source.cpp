// source.cpp: the librdkafka side of the Kafka source: the consumer, its
// partitions (static or from the group), rebalances held until a
// checkpoint has the revoked partitions' last offsets, and commits.
#include "troupe/kafka/source.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "client.hpp"

namespace troupe::kafka::detail {

namespace {

std::string who(const source_config& cfg) {
  return "kafka source '" + cfg.topic + (cfg.group.empty() ? "" : "' (group '" + cfg.group + "')") +
         (cfg.group.empty() ? "'" : "");
}

struct list_deleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const noexcept { rd_kafka_topic_partition_list_destroy(l); }
};
using list_ptr = std::unique_ptr<rd_kafka_topic_partition_list_t, list_deleter>;
list_ptr new_list(std::size_t n) {
  return list_ptr{rd_kafka_topic_partition_list_new(static_cast<int>(std::max<std::size_t>(n, 1)))};
}

void destroy_messages(std::vector<rd_kafka_message_t*>* v) {
  for (rd_kafka_message_t* m : *v) rd_kafka_message_destroy(m);
  delete v;
}

/// Errors a consumer goes on through (librdkafka reconnects and retries).
bool transient(rd_kafka_resp_err_t e) {
  switch (e) {
    case RD_KAFKA_RESP_ERR__PARTITION_EOF:
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR__RESOLVE:
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
    case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
    case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
    case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void check(const source_config& cfg) {
  const auto bad = [&](const std::string& what) { throw kafka_error{who(cfg) + ": " + what}; };
  if (cfg.topic.empty()) bad("no topic named (source_config::topic)");
  if (cfg.client.brokers.empty()) bad("no brokers (client_config::brokers)");
  if (cfg.assign == assignment::consumer_group && cfg.group.empty())
    bad("assignment::consumer_group needs a group (source_config::group)");
  if (cfg.assign == assignment::consumer_group && cfg.bounded)
    bad("a bounded source reads static partitions (assignment::static_partitions)");
  if (cfg.batch < 1 || cfg.batch > 1'000'000) bad("batch must be 1 to 1000000, not " + std::to_string(cfg.batch));
  if (cfg.poll.count() < 1) bad("poll must be at least 1 ms");
  if (cfg.watermark_lag.count() < 0) bad("watermark_lag may not be negative");
  if (cfg.idle_after.count() < 0) bad("idle_after may not be negative");
  if (cfg.commit_every.count() < 0) bad("commit_every may not be negative");
  if (cfg.client.timeout.count() < 1) bad("client.timeout must be at least 1 ms");
}

void throw_decode_error(const source_config& cfg, const message& m, const char* what) {
  throw kafka_error{who(cfg) + ": record " + std::to_string(m.partition) + "@" + std::to_string(m.offset) + " (" +
                    std::to_string(m.value.size()) + " bytes): " + what};
}

struct consumer::impl {
  consumer& self;
  source_config cfg;
  std::size_t replica, replicas;
  std::vector<offset> restored;
  bool checkpointing;
  std::function<void()> wake;
  std::string name;
  rd_kafka_t* rk = nullptr;
  rd_kafka_queue_t* queue = nullptr;
  std::string failure;  // a rebalance failed (thrown from take())
  bool closing = false;
  bool timestamps = true;                   // read each record's timestamp (a timed source)
  std::vector<rd_kafka_message_t*> buffer;  // what consume_batch_queue fills
  std::vector<std::int32_t> handover;       // revoked, waiting for a checkpoint
  std::uint64_t handover_at = 0;            // the checkpoint that holds their last offsets (0: none yet)
  std::int64_t last_commit_ns = 0;
  std::vector<offset> last_committed;

  std::mutex m;
  std::condition_variable cv;
  bool stop = false;
  std::thread ticker;

  impl(consumer& c, const source_config& cf, std::size_t r, std::size_t rs, std::vector<offset> res, bool ck,
       std::function<void()> w)
      : self{c},
        cfg{cf},
        replica{r},
        replicas{rs},
        restored{std::move(res)},
        checkpointing{ck},
        wake{std::move(w)},
        name{who(cf)} {}
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;

  ~impl() {
    {
      std::lock_guard<std::mutex> g{m};
      stop = true;
    }
    cv.notify_all();
    if (ticker.joinable()) ticker.join();
    if (queue != nullptr) {
      rd_kafka_queue_cb_event_enable(queue, nullptr, nullptr);
      rd_kafka_queue_destroy(queue);
    }
    if (rk != nullptr) {
      closing = true;  // a revoke now gives the partitions up at once
      if (cfg.assign == assignment::consumer_group) (void)rd_kafka_consumer_close(rk);
      rd_kafka_destroy(rk);
    }
  }

  static void on_event(rd_kafka_t*, void* opaque) { static_cast<impl*>(opaque)->wake(); }

  static void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts,
                           void* opaque) {
    auto& s = *static_cast<impl*>(rd_kafka_opaque(rk));
    (void)opaque;
    try {
      if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) s.assigned(parts);
      else s.revoked(parts);
    } catch (const std::exception& e) {
      if (s.failure.empty()) s.failure = e.what();
    }
  }

  bool cooperative() const { return std::string_view{rd_kafka_rebalance_protocol(rk)} == "COOPERATIVE"; }

  partition_state& part(std::int32_t p) {
    auto& v = self.parts_;
    if (static_cast<std::size_t>(p) >= v.size()) v.resize(static_cast<std::size_t>(p) + 1);
    return v[static_cast<std::size_t>(p)];
  }

  void connect() {
    property_list own{{"enable.auto.commit", "false"},
                      {"enable.auto.offset.store", "false"},
                      {"enable.partition.eof", "false"},
                      // librdkafka 2.0's default (100000) pauses fetching for a
                      // second at times when the queue holds more (measured).
                      {"queued.min.messages", "1000000"},
                      {"auto.offset.reset", cfg.start == start_from::latest ? "latest" : "earliest"},
                      {"client.id", "troupe-" + cfg.topic + "-" + std::to_string(replica)}};
    if (cfg.assign == assignment::consumer_group)
      own.emplace_back("partition.assignment.strategy", "cooperative-sticky");
    // librdkafka's consumer queue needs a group; without one the source
    // takes a name it never joins or commits to.
    own.emplace_back("group.id", cfg.group.empty() ? "troupe-" + cfg.topic + "-unused" : cfg.group);
    rd_kafka_conf_t* conf = make_conf(name, cfg.client, own);
    rd_kafka_conf_set_opaque(conf, this);
    if (cfg.assign == assignment::consumer_group) rd_kafka_conf_set_rebalance_cb(conf, &impl::on_rebalance);
    rk = make_handle(name, RD_KAFKA_CONSUMER, conf);
    check(name + ": taking the main queue", rd_kafka_poll_set_consumer(rk));
    queue = rd_kafka_queue_get_consumer(rk);
    rd_kafka_queue_cb_event_enable(queue, &impl::on_event, this);
  }

  /// Each partition's earliest (which = RD_KAFKA_OFFSET_BEGINNING) or
  /// latest (RD_KAFKA_OFFSET_END: with read_committed, the last stable)
  /// offset: one request per leader, not one per partition.
  std::vector<std::int64_t> edge(const rd_kafka_topic_partition_list_t* l, std::int64_t which) {
    list_ptr q{rd_kafka_topic_partition_list_copy(l)};
    for (int i = 0; i < q->cnt; ++i) q->elems[i].offset = which;
    check(name + ": the partitions' offsets", rd_kafka_offsets_for_times(rk, q.get(), timeout_ms(cfg.client)));
    std::vector<std::int64_t> out(static_cast<std::size_t>(q->cnt));
    for (int i = 0; i < q->cnt; ++i) {
      check(name + ": the offsets of partition " + std::to_string(q->elems[i].partition), q->elems[i].err);
      out[static_cast<std::size_t>(i)] = q->elems[i].offset;
    }
    return out;
  }

  /// Where partitions start: the restored offset, else the committed one,
  /// else as cfg.start says (the earliest or latest offset). `keep_later`:
  /// the committed offset wins where it is beyond the restored one (another
  /// member of the group read on meanwhile).
  void start_offsets(rd_kafka_topic_partition_list_t* l, bool keep_later) {
    if (l->cnt == 0) return;  // (a cooperative rebalance may assign nothing new)
    const bool use_committed = !cfg.group.empty() && cfg.start == start_from::committed;
    if (use_committed)
      check(name + ": reading the group's committed offsets", rd_kafka_committed(rk, l, timeout_ms(cfg.client)));
    const auto restored_at = [&](std::int32_t p) {
      return std::find_if(restored.begin(), restored.end(), [&](const offset& o) { return o.partition == p; });
    };
    bool need_low = false;
    for (int i = 0; i < l->cnt; ++i)
      need_low = need_low || (cfg.start != start_from::latest && (!use_committed || l->elems[i].offset < 0) &&
                              restored_at(l->elems[i].partition) == restored.end());
    const auto hi = edge(l, RD_KAFKA_OFFSET_END);  // where a bounded source ends, and `latest`
    const auto lo = need_low ? edge(l, RD_KAFKA_OFFSET_BEGINNING) : std::vector<std::int64_t>{};
    for (int i = 0; i < l->cnt; ++i) {
      auto& tp = l->elems[i];
      const auto k = static_cast<std::size_t>(i);
      const std::int64_t committed = use_committed ? tp.offset : -1;
      std::int64_t at = cfg.start == start_from::latest ? hi[k] : (need_low ? lo[k] : 0);
      if (committed >= 0) at = committed;
      if (const auto r = restored_at(tp.partition); r != restored.end())
        at = keep_later ? std::max(r->next, committed) : r->next;
      tp.offset = at;
      partition_state& p = part(tp.partition);
      p = partition_state{};
      p.assigned = true;
      p.next = at;
      p.end = hi[k];
    }
  }

  void assign_static() {
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, cfg.topic.c_str(), nullptr);
    const rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms(cfg.client));
    rd_kafka_topic_destroy(rkt);
    check(name + ": reading the topic's metadata", e);
    const auto& topic = md->topics[0];
    const rd_kafka_resp_err_t te = topic.err;
    const int n = topic.partition_cnt;
    rd_kafka_metadata_destroy(md);
    if (te == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || (te == RD_KAFKA_RESP_ERR_NO_ERROR && n == 0))
      throw kafka_error{name + ": the topic does not exist"};
    check(name + ": the topic's metadata", te);
    list_ptr l = new_list(static_cast<std::size_t>(n));
    for (int p = 0; p < n; ++p)
      if (static_cast<std::size_t>(p) % replicas == replica)
        rd_kafka_topic_partition_list_add(l.get(), cfg.topic.c_str(), p);
    if (l->cnt == 0) return;
    start_offsets(l.get(), false);
    check(name + ": assigning its partitions", rd_kafka_assign(rk, l.get()));
  }

  void assigned(rd_kafka_topic_partition_list_t* parts) {
    start_offsets(parts, true);
    if (cooperative()) check(name + ": taking partitions", rd_kafka_incremental_assign(rk, parts));
    else check(name + ": taking partitions", rd_kafka_assign(rk, parts));
  }

  void revoked(rd_kafka_topic_partition_list_t* parts) {
    const bool lost = rd_kafka_assignment_lost(rk) != 0;
    for (int i = 0; i < parts->cnt; ++i) {
      const std::int32_t p = parts->elems[i].partition;
      if (static_cast<std::size_t>(p) < self.parts_.size() && self.parts_[static_cast<std::size_t>(p)].assigned) {
        self.parts_[static_cast<std::size_t>(p)].revoked = true;
        handover.push_back(p);
      }
    }
    // Lost (this member was thrown out): others may have the partitions
    // already; commit nothing. Without checkpoints, or closing: commit what
    // was emitted and give them up now. Else after the next checkpoint.
    if (lost || closing || !checkpointing) {
      if (!lost) commit(revoked_positions(), false, true);
      give_up();
    }
  }

  std::vector<offset> revoked_positions() const {
    std::vector<offset> out;
    out.reserve(handover.size());
    for (std::int32_t p : handover) out.push_back({p, self.parts_[static_cast<std::size_t>(p)].next});
    return out;
  }

  /// Hands the revoked partitions to the group.
  void give_up() {
    list_ptr l = new_list(handover.size());
    for (std::int32_t p : handover) {
      rd_kafka_topic_partition_list_add(l.get(), cfg.topic.c_str(), p);
      self.parts_[static_cast<std::size_t>(p)] = partition_state{};
    }
    handover.clear();
    handover_at = 0;
    if (cooperative()) check(name + ": giving partitions up", rd_kafka_incremental_unassign(rk, l.get()));
    else check(name + ": giving partitions up", rd_kafka_assign(rk, nullptr));
  }

  /// Commits `offsets` to the group: asynchronously (one that fails is made
  /// good by the next), or waiting for the broker. A synchronous one that
  /// fails for good throws, unless `quiet`: a failed commit leaves the
  /// group's offsets earlier, never later (a fresh start or a new owner
  /// reads some records again).
  void commit(const std::vector<offset>& offsets, bool async, bool quiet = false) {
    if (cfg.group.empty() || offsets.empty()) return;
    list_ptr l = new_list(offsets.size());
    for (const offset& o : offsets)
      rd_kafka_topic_partition_list_add(l.get(), cfg.topic.c_str(), o.partition)->offset = o.next;
    const rd_kafka_resp_err_t e = rd_kafka_commit(rk, l.get(), async ? 1 : 0);
    last_committed = offsets;
    last_commit_ns = steady_ns();
    if (async || quiet || e == RD_KAFKA_RESP_ERR_NO_ERROR || e == RD_KAFKA_RESP_ERR__NO_OFFSET || transient(e)) return;
    switch (e) {
      case RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS:  // the group moved on: the new owners read from the last commit
      case RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION:
      case RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID:
        return;
      default:
        check(name + ": committing offsets", e);
    }
  }

  void tick() {
    std::unique_lock<std::mutex> g{m};
    while (!stop) {
      cv.wait_for(g, cfg.poll, [&] { return stop; });
      if (!stop) wake();
    }
  }
};

consumer::consumer(const source_config& cfg, std::size_t replica, std::size_t replicas, std::vector<offset> restored,
                   bool checkpointing, bool ticks, bool timestamps, std::function<void()> wake)
    : impl_{
          std::make_unique<impl>(*this, cfg, replica, replicas, std::move(restored), checkpointing, std::move(wake))} {
  impl_->timestamps = timestamps;
  impl_->connect();
  if (cfg.assign == assignment::static_partitions) {
    impl_->assign_static();
  } else {
    list_ptr l = new_list(1);
    rd_kafka_topic_partition_list_add(l.get(), cfg.topic.c_str(), RD_KAFKA_PARTITION_UA);
    check(impl_->name + ": subscribing", rd_kafka_subscribe(impl_->rk, l.get()));
  }
  impl_->last_commit_ns = steady_ns();
  if (ticks) impl_->ticker = std::thread{[s = impl_.get()] { s->tick(); }};  // (impl_ is null while ~consumer joins it)
}

consumer::~consumer() {
  impl_.reset();  // first: closing may call the rebalance callback, which uses parts_
}

bool consumer::take(fetched& out) {
  auto& s = *impl_;
  s.buffer.resize(static_cast<std::size_t>(s.cfg.batch));
  const ssize_t n = rd_kafka_consume_batch_queue(s.queue, 0, s.buffer.data(), s.buffer.size());
  if (n <= 0) {
    if (!s.failure.empty()) throw kafka_error{s.failure};
    if (n < 0) check(s.name + ": reading", rd_kafka_last_error());
    return false;
  }
  auto* got = new std::vector<rd_kafka_message_t*>(s.buffer.begin(), s.buffer.begin() + n);
  out.owner =
      std::shared_ptr<void>{got, [](void* p) { destroy_messages(static_cast<std::vector<rd_kafka_message_t*>*>(p)); }};
  if (!s.failure.empty()) throw kafka_error{s.failure};
  out.messages.clear();
  out.messages.reserve(got->size());
  for (rd_kafka_message_t* r : *got) {
    if (r->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (transient(r->err)) continue;
      char fatal[256];
      if (rd_kafka_fatal_error(s.rk, fatal, sizeof fatal) != RD_KAFKA_RESP_ERR_NO_ERROR)
        throw kafka_error{s.name + ": " + fatal};
      throw kafka_error{s.name + ": " + rd_kafka_message_errstr(r) + " (" + rd_kafka_err2name(r->err) + ")"};
    }
    message x;
    x.topic = s.cfg.topic;
    x.partition = r->partition;
    x.offset = r->offset;
    if (s.timestamps) {
      rd_kafka_timestamp_type_t tt{};
      x.timestamp_ms = rd_kafka_message_timestamp(r, &tt);
    }
    x.key = std::string_view{static_cast<const char*>(r->key), r->key != nullptr ? r->key_len : 0};
    x.value = std::string_view{static_cast<const char*>(r->payload), r->payload != nullptr ? r->len : 0};
    out.messages.push_back(x);
  }
  if (out.messages.empty()) {
    out.owner.reset();
    return false;
  }
  return true;
}

void consumer::catch_up() {
  list_ptr l = new_list(parts_.size());
  for (std::size_t p = 0; p < parts_.size(); ++p)
    if (parts_[p].assigned && !parts_[p].revoked && parts_[p].next < parts_[p].end)
      rd_kafka_topic_partition_list_add(l.get(), impl_->cfg.topic.c_str(), static_cast<std::int32_t>(p));
  if (l->cnt == 0 || rd_kafka_position(impl_->rk, l.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
  for (int i = 0; i < l->cnt; ++i) {
    auto& p = parts_[static_cast<std::size_t>(l->elems[i].partition)];
    if (l->elems[i].offset > p.next) p.next = l->elems[i].offset;
  }
}

bool consumer::at_end() const noexcept {
  return std::all_of(parts_.begin(), parts_.end(),
                     [](const partition_state& p) { return !p.assigned || p.next >= p.end; });
}

std::vector<offset> consumer::positions() const {
  std::vector<offset> out;
  for (std::size_t p = 0; p < parts_.size(); ++p)
    if (parts_[p].assigned && !parts_[p].revoked) out.push_back({static_cast<std::int32_t>(p), parts_[p].next});
  return out;
}

std::vector<offset> consumer::snapshot(std::uint64_t id) {
  if (!impl_->handover.empty() && impl_->handover_at == 0) impl_->handover_at = id;
  std::vector<offset> out;
  for (std::size_t p = 0; p < parts_.size(); ++p)
    if (parts_[p].assigned) out.push_back({static_cast<std::int32_t>(p), parts_[p].next});
  return out;
}

void consumer::completed(std::uint64_t id, const std::vector<offset>& offsets) {
  auto& s = *impl_;
  const bool hand_over = s.handover_at != 0 && id >= s.handover_at;
  if (hand_over) {
    s.commit(offsets, false, true);  // the new owner starts from what this commits
    s.give_up();
    return;
  }
  // A commit in flight when a rebalance completes is refused (an old
  // generation), and librdkafka then takes the whole assignment as lost:
  // in a group, commit every commit_every only.
  if (s.cfg.assign == assignment::consumer_group &&
      steady_ns() - s.last_commit_ns < std::chrono::nanoseconds{s.cfg.commit_every}.count())
    return;
  s.commit(offsets, true);
}

void consumer::commit_positions(bool now) {
  auto& s = *impl_;
  if (s.cfg.group.empty()) return;
  if (!now && steady_ns() - s.last_commit_ns < std::chrono::nanoseconds{s.cfg.commit_every}.count()) return;
  std::vector<offset> p = positions();
  if (!now && p.size() == s.last_committed.size() &&
      std::equal(p.begin(), p.end(), s.last_committed.begin(),
                 [](const offset& a, const offset& b) { return a.partition == b.partition && a.next == b.next; })) {
    s.last_commit_ns = steady_ns();
    return;
  }
  s.commit(p, !now);
}

}  // namespace troupe::kafka::detail
