// sink.cpp: the librdkafka side of the Kafka sink: an idempotent producer,
// transactions with a marker committed as an offset, and reading the
// marker back.
#include "troupe/kafka/sink.hpp"

#include <atomic>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "client.hpp"

namespace troupe::kafka::detail {

namespace {
std::string who(const sink_config& cfg) { return "kafka sink '" + cfg.topic + "'"; }
constexpr const char* marker_prefix = "troupe:";
}  // namespace

void check(const sink_config& cfg) {
  if (cfg.topic.empty()) throw kafka_error{who(cfg) + ": no topic named (sink_config::topic)"};
  if (cfg.client.brokers.empty()) throw kafka_error{who(cfg) + ": no brokers (client_config::brokers)"};
  if (cfg.client.timeout.count() < 1) throw kafka_error{who(cfg) + ": client.timeout must be at least 1 ms"};
}

std::string transactional_id(const sink_config& cfg, std::size_t replica) {
  return (cfg.transactional_id.empty() ? "troupe-" + cfg.topic : cfg.transactional_id) + "-" + std::to_string(replica);
}

struct producer::impl {
  sink_config cfg;
  std::string name, txn_id;
  rd_kafka_t* rk = nullptr;
  rd_kafka_topic_t* rkt = nullptr;
  std::uint64_t produced = 0;
  std::mutex m;
  std::string failure;  // the first delivery that failed

  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* msg, void* opaque) {
    if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    auto& s = *static_cast<impl*>(opaque);
    std::lock_guard<std::mutex> g{s.m};
    if (s.failure.empty())
      s.failure = s.name + ": a record was not stored: " + rd_kafka_err2str(msg->err) + " (" +
                  rd_kafka_err2name(msg->err) + ")";
  }

  void rethrow() {
    std::lock_guard<std::mutex> g{m};
    if (!failure.empty()) throw kafka_error{failure};
  }

  /// Runs a transactional call, retrying what librdkafka says is retriable;
  /// a call that leaves the transaction to abort aborts it and throws.
  template <class F>
  void txn_call(const char* what, F f) {
    for (int attempt = 0;; ++attempt) {
      rd_kafka_error_t* e = f();
      if (e == nullptr) return;
      if (rd_kafka_error_is_retriable(e) != 0 && attempt < 10) {
        rd_kafka_error_destroy(e);
        continue;
      }
      if (rd_kafka_error_txn_requires_abort(e) != 0) (void)rd_kafka_abort_transaction(rk, timeout_ms(cfg.client));
      check(name + ": " + what, e);
    }
  }
};

producer::producer(const sink_config& cfg, std::string txn) : impl_{std::make_unique<impl>()} {
  auto& s = *impl_;
  s.cfg = cfg;
  s.name = who(cfg);
  s.txn_id = std::move(txn);
  property_list own{{"enable.idempotence", "true"}, {"linger.ms", "5"}, {"client.id", "troupe-" + cfg.topic}};
  if (!s.txn_id.empty()) own.emplace_back("transactional.id", s.txn_id);
  rd_kafka_conf_t* conf = make_conf(s.name, cfg.client, own);
  rd_kafka_conf_set_opaque(conf, &s);
  rd_kafka_conf_set_dr_msg_cb(conf, &impl::on_delivery);
  s.rk = make_handle(s.name, RD_KAFKA_PRODUCER, conf);
  s.rkt = rd_kafka_topic_new(s.rk, cfg.topic.c_str(), nullptr);
  if (!s.txn_id.empty()) {
    // Fences an older instance with the same id and aborts what it left open.
    rd_kafka_error_t* e = rd_kafka_init_transactions(s.rk, timeout_ms(cfg.client));
    if (e != nullptr) {
      std::string text = s.name + ": starting transactions as '" + s.txn_id + "': " + rd_kafka_error_string(e);
      rd_kafka_error_destroy(e);
      rd_kafka_topic_destroy(s.rkt);
      rd_kafka_destroy(s.rk);
      throw kafka_error{text};
    }
  }
}

producer::~producer() {
  // Undelivered records go with the handle (a sink that ends normally
  // flushed them; one that is cancelled is a crash).
  rd_kafka_topic_destroy(impl_->rkt);
  rd_kafka_destroy(impl_->rk);
}

void producer::produce(std::string_view key, std::string_view value, std::int32_t partition) {
  auto& s = *impl_;
  for (;;) {
    if (rd_kafka_produce(s.rkt, partition < 0 ? RD_KAFKA_PARTITION_UA : partition, RD_KAFKA_MSG_F_COPY,
                         const_cast<char*>(value.data()), value.size(), key.empty() ? nullptr : key.data(), key.size(),
                         nullptr) == 0)
      break;
    const rd_kafka_resp_err_t e = rd_kafka_last_error();
    if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) check(s.name + ": producing", e);
    (void)rd_kafka_poll(s.rk, 10);  // librdkafka's queue is full: let deliveries drain it
    s.rethrow();
  }
  if ((++s.produced & 1023) == 0) {
    (void)rd_kafka_poll(s.rk, 0);
    s.rethrow();
  }
}

void producer::flush() {
  auto& s = *impl_;
  while (rd_kafka_outq_len(s.rk) > 0) {
    (void)rd_kafka_flush(s.rk, 100);
    s.rethrow();
  }
  (void)rd_kafka_poll(s.rk, 0);
  s.rethrow();
}

void producer::begin() {
  auto& s = *impl_;
  s.txn_call("beginning a transaction", [&] { return rd_kafka_begin_transaction(s.rk); });
}

void producer::commit(std::uint64_t run, std::uint64_t checkpoint) {
  auto& s = *impl_;
  char meta[64];
  std::snprintf(meta, sizeof meta, "%s%" PRIu64 ":%" PRIu64, marker_prefix, run, checkpoint);
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_t* tp = rd_kafka_topic_partition_list_add(l, s.cfg.topic.c_str(), 0);
  tp->offset = static_cast<std::int64_t>(run);
  tp->metadata = strdup(meta);  // freed with the list
  tp->metadata_size = std::strlen(meta);
  rd_kafka_consumer_group_metadata_t* group = rd_kafka_consumer_group_metadata_new(s.txn_id.c_str());
  try {
    s.txn_call("committing the marker with the transaction",
               [&] { return rd_kafka_send_offsets_to_transaction(s.rk, l, group, timeout_ms(s.cfg.client)); });
    s.txn_call("committing a transaction", [&] { return rd_kafka_commit_transaction(s.rk, timeout_ms(s.cfg.client)); });
  } catch (...) {
    rd_kafka_consumer_group_metadata_destroy(group);
    rd_kafka_topic_partition_list_destroy(l);
    throw;
  }
  rd_kafka_consumer_group_metadata_destroy(group);
  rd_kafka_topic_partition_list_destroy(l);
  s.rethrow();
}

std::pair<std::uint64_t, std::uint64_t> producer::committed_marker() {
  auto& s = *impl_;
  rd_kafka_conf_t* conf =
      make_conf(s.name, s.cfg.client,
                {{"group.id", s.txn_id}, {"isolation.level", "read_committed"}, {"enable.auto.commit", "false"}});
  rd_kafka_t* c = make_handle(s.name + " (reading its marker)", RD_KAFKA_CONSUMER, conf);
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, s.cfg.topic.c_str(), 0);
  const rd_kafka_resp_err_t e = rd_kafka_committed(c, l, timeout_ms(s.cfg.client));
  std::pair<std::uint64_t, std::uint64_t> out{0, 0};
  std::string meta;
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR && l->elems[0].metadata != nullptr)
    meta.assign(static_cast<const char*>(l->elems[0].metadata), l->elems[0].metadata_size);
  rd_kafka_topic_partition_list_destroy(l);
  rd_kafka_destroy(c);
  check(s.name + ": reading the transactions' marker", e);
  // "troupe:<run>:<checkpoint>"; anything else (another program's offsets): none.
  if (meta.rfind(marker_prefix, 0) != 0) return out;
  const std::string_view rest = std::string_view{meta}.substr(std::strlen(marker_prefix));
  const auto colon = rest.find(':');
  std::uint64_t run = 0, ckpt = 0;
  const auto number = [](std::string_view t, std::uint64_t& v) {
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    return ec == std::errc{} && end == t.data() + t.size() && !t.empty();
  };
  if (colon != std::string_view::npos && number(rest.substr(0, colon), run) && number(rest.substr(colon + 1), ckpt))
    out = {run, ckpt};
  return out;
}

}  // namespace troupe::kafka::detail
