// kafka: the Kafka connectors (troupe::kafka) against plain librdkafka loops
// on librdkafka's mock cluster, reading and writing records of 31 bytes.
//
// Each run starts its own mock cluster (one broker, inside the run's
// process: the harness forks a process per run, and the mock brokers are
// threads of the process that starts them), so every run reads or writes a
// fresh topic and sees no other run's records or offsets. The source
// variant fills its topic with the n records before the measured region.
// The mock keeps at most 5 MiB of a partition (about 130,000 such records;
// it drops the oldest beyond that), so the source's topic has a partition
// per 65,536 records (4 for 256k), all read by one consumer; the sinks
// write to a topic of one partition.
//
// variant "source": every partition from offset 0 to its high watermark
//   troupe        kafka::text_source (bounded, batches of 512, no group: no
//                 commits) -> a sink counting the records and their bytes;
//                 from spawn to the graph's end (the consumer made, its
//                 partitions assigned, read to the end, destroyed)
//   raw           librdkafka: a consumer with the connector's settings, the
//                 partitions' high watermarks queried and assigned at offset
//                 0, rd_kafka_consume_batch_queue of up to 512 until all is
//                 read, each value copied into a std::string (as the
//                 text_source's decoder does) and counted; from rd_kafka_new
//                 to rd_kafka_destroy
// variant "sink": n records made by snprintf, one after the other
//   troupe        -> kafka::text_sink (at_least_once, no checkpoints); from
//                 spawn to the graph's end (every record acknowledged)
//   raw           librdkafka: an idempotent producer (linger.ms 5, a
//                 delivery callback counting failures, as the sink's),
//                 rd_kafka_produce with RD_KAFKA_MSG_F_COPY of each record
//                 (polled every 1,024 and, for 10 ms, while the queue is
//                 full, as the sink), then rd_kafka_flush; from rd_kafka_new
//                 to the end of the flush
//   exactly_once  troupe's with delivery::exactly_once under checkpoints
//                 every second (produced in a transaction per completed
//                 checkpoint; the stream's end commits the rest at once)
// The table's "vs troupe" is troupe's median over the row's: for raw the
// ratio troupe/raw, for exactly_once at_least_once/exactly_once. The
// exactly_once implementation has no source: skipped there.
// params:
//   n        records (--records N; default 262,144, --full 1,048,576)
//   workers  the actor system's workers (1: the mock broker, librdkafka's
//            threads and the worker share the 2 cores)
//   sink     0: the source variant, 1: the sink variant
// Outliers: librdkafka (2.0) stops fetching a partition for a second when
// more than queued.min.messages (100,000) records wait in the consumer's
// queue; a reader that drains it before then waits out the rest (seen in
// about 1 run in 30 of either source). Both run with librdkafka's defaults.
// Figure: records_per_s (higher is better).
// Check: the records and bytes read (sources); the topic's high watermark
// is n and what the mock still keeps of it is the last records, in order
// (sinks; read_committed for exactly_once).

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/harness.hpp"
#include "common/temp_dir.hpp"
#include "kafka_mock.hpp"
#include "troupe/kafka.hpp"
#include "troupe/troupe.hpp"

namespace {

namespace kafka = troupe::kafka;
namespace st = troupe::stream;

/// --records N (0: the variant's default).
std::int64_t records_flag = 0;
/// --help: the harness prints its usage, then main adds --records.
bool help = false;

std::string record(std::int64_t i) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "record %024lld", static_cast<long long>(i));
  return buf;
}

/// Keeps the compiler from dropping a string nobody reads.
inline void keep(const std::string& s) { asm volatile("" : : "r"(s.data()) : "memory"); }

/// The mock cluster keeps at most 5 MiB of a partition (rdkafka_mock.c:
/// max_size, then it drops the oldest message sets): about 130,000 records
/// of 31 bytes. The source's topic has one partition per this many records.
constexpr std::int64_t per_partition = 65536;

int source_partitions(std::int64_t n) { return static_cast<int>((n + per_partition - 1) / per_partition); }

/// A mock cluster of the run's own (one broker).
struct setting {
  kafka_mock::cluster mock{1};

  /// Topic `topic` of `partitions` partitions, holding records 0 .. n-1
  /// round robin over them.
  void fill(const std::string& topic, int partitions, std::int64_t n) {
    mock.make_topic(topic, partitions);
    std::vector<std::string> values;
    values.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) values.push_back(record(i));
    kafka_mock::produce(mock.brokers(), topic, values, partitions);
  }

  /// The low and high watermarks of partition `p`.
  std::pair<std::int64_t, std::int64_t> watermarks(const std::string& topic, int p) {
    rd_kafka_t* rk = kafka_mock::handle(RD_KAFKA_CONSUMER, {{"bootstrap.servers", mock.brokers()}});
    std::int64_t lo = 0, hi = 0;
    const rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, topic.c_str(), p, &lo, &hi, 10000);
    rd_kafka_destroy(rk);
    bench::check(e == RD_KAFKA_RESP_ERR_NO_ERROR, "watermarks of " + topic);
    return {lo, hi};
  }

  /// Partition 0 of `topic` (its only one) ends at offset n, and what the
  /// mock still keeps of it is the last records of 0 .. n-1, in order.
  void check_out(const std::string& topic, std::int64_t n, bool committed) {
    const auto [lo, hi] = watermarks(topic, 0);
    bench::check_eq("records stored (the high watermark)", n, hi);
    const auto got = kafka_mock::read_all(mock.brokers(), topic, committed);
    bench::check_eq("records kept", hi - lo, static_cast<std::int64_t>(got.size()));
    for (std::int64_t i = lo; i < hi; ++i)
      bench::check(got[static_cast<std::size_t>(i - lo)] == record(i),
                   "record " + std::to_string(i) + " stored as '" + got[static_cast<std::size_t>(i - lo)] + "'");
  }
};

bench::sample rate(double s, std::int64_t n) {
  bench::sample out;
  out.wall_s = s;
  out.add("records_per_s", static_cast<double>(n) / s, "records/s", true);
  return out;
}

void check_graph(const troupe::error& e) {
  if (e) bench::check(false, "the graph failed: " + e.message());
}

rd_kafka_conf_t* conf(const std::vector<std::pair<std::string, std::string>>& props) {
  rd_kafka_conf_t* c = rd_kafka_conf_new();
  char err[512];
  for (const auto& [k, v] : props)
    bench::check(rd_kafka_conf_set(c, k.c_str(), v.c_str(), err, sizeof err) == RD_KAFKA_CONF_OK, k + ": " + err);
  return c;
}

// -- source ---------------------------------------------------------------------

bench::sample source_troupe(const bench::params& p) {
  const auto n = p.get("n");
  setting set;
  set.fill("in", source_partitions(n), n);
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  std::atomic<std::int64_t> seen{0};
  std::atomic<std::int64_t> bytes{0};
  bench::stopwatch sw;
  auto g = troupe::spawn_pattern(sys, troupe::pipeline{kafka::text_source({.client = {.brokers = set.mock.brokers()},
                                                                           .topic = "in",
                                                                           .start = kafka::start_from::earliest,
                                                                           .batch = 512,
                                                                           .bounded = true}),
                                                       st::sink([&](const std::string& s) {
                                                         seen.fetch_add(1, std::memory_order_relaxed);
                                                         bytes.fetch_add(static_cast<std::int64_t>(s.size()),
                                                                         std::memory_order_relaxed);
                                                       })});
  g.wait();
  const double s = sw.seconds();
  check_graph(g.error());
  bench::check_eq("records read", n, seen.load());
  bench::check_eq("bytes read", n * 31, bytes.load());
  return rate(s, n);
}

bench::sample source_raw(const bench::params& p) {
  const auto n = p.get("n");
  const int partitions = source_partitions(n);
  setting set;
  set.fill("in", partitions, n);
  std::int64_t seen = 0;
  std::int64_t bytes = 0;
  bench::stopwatch sw;
  // The connector's own consumer settings; a group it never joins or commits to.
  rd_kafka_conf_t* c = conf({{"bootstrap.servers", set.mock.brokers()},
                             {"group.id", "bench-raw-unused"},
                             {"enable.auto.commit", "false"},
                             {"enable.auto.offset.store", "false"},
                             {"enable.partition.eof", "false"},
                             {"auto.offset.reset", "earliest"}});
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof err);
  bench::check(rk != nullptr, std::string{"consumer: "} + err);
  bench::check(rd_kafka_poll_set_consumer(rk) == RD_KAFKA_RESP_ERR_NO_ERROR, "consumer queue");
  rd_kafka_queue_t* q = rd_kafka_queue_get_consumer(rk);
  // Every partition from offset 0 to its high watermark (as the bounded source).
  std::int64_t total = 0;
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(partitions);
  for (int i = 0; i < partitions; ++i) {
    std::int64_t lo = 0, hi = 0;
    bench::check(rd_kafka_query_watermark_offsets(rk, "in", i, &lo, &hi, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR,
                 "watermarks");
    total += hi;
    rd_kafka_topic_partition_list_add(l, "in", i)->offset = 0;
  }
  bench::check(rd_kafka_assign(rk, l) == RD_KAFKA_RESP_ERR_NO_ERROR, "assign");
  rd_kafka_topic_partition_list_destroy(l);
  std::vector<rd_kafka_message_t*> batch(512);
  while (seen < total) {
    // Never more than what is left: the call waits for a full batch (or the timeout).
    const auto want = static_cast<std::size_t>(std::min<std::int64_t>(512, total - seen));
    const ssize_t got = rd_kafka_consume_batch_queue(q, 5000, batch.data(), want);
    bench::check(got > 0, "no records for 5 s after " + std::to_string(seen));
    for (ssize_t i = 0; i < got; ++i) {
      rd_kafka_message_t* m = batch[static_cast<std::size_t>(i)];
      if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        const std::string why = rd_kafka_message_errstr(m);
        rd_kafka_message_destroy(m);
        bench::check(false, "reading: " + why);
      }
      const std::string v{static_cast<const char*>(m->payload), m->len};
      keep(v);
      bytes += static_cast<std::int64_t>(v.size());
      ++seen;
      rd_kafka_message_destroy(m);
    }
  }
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  const double s = sw.seconds();
  bench::check_eq("records read", n, seen);
  bench::check_eq("bytes read", n * 31, bytes);
  return rate(s, n);
}

// -- sink -----------------------------------------------------------------------

bench::sample sink_troupe(const bench::params& p, kafka::delivery mode) {
  const auto n = p.get("n");
  setting set;
  set.mock.make_topic("out", 1);
  const bench::temp_dir ckpt{"troupe_bench_kafka_ckpt_"};
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  st::options o;
  if (mode == kafka::delivery::exactly_once) o.checkpoint = {.dir = ckpt.path(), .interval = std::chrono::seconds{1}};
  bench::stopwatch sw;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{st::generator([n](std::uint64_t i) -> std::optional<std::string> {
                         if (static_cast<std::int64_t>(i) == n) return std::nullopt;
                         return record(static_cast<std::int64_t>(i));
                       }),
                       kafka::text_sink({.client = {.brokers = set.mock.brokers()}, .topic = "out", .mode = mode})},
      o);
  g.wait();
  const double s = sw.seconds();
  check_graph(g.error());
  set.check_out("out", n, mode == kafka::delivery::exactly_once);
  return rate(s, n);
}

/// Delivery reports of the raw producer (the sink keeps the first failure).
struct deliveries {
  std::atomic<std::int64_t> failed{0};
  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR)
      static_cast<deliveries*>(opaque)->failed.fetch_add(1, std::memory_order_relaxed);
  }
};

bench::sample sink_raw(const bench::params& p) {
  const auto n = p.get("n");
  setting set;
  set.mock.make_topic("out", 1);
  deliveries dr;
  bench::stopwatch sw;
  rd_kafka_conf_t* c =
      conf({{"bootstrap.servers", set.mock.brokers()}, {"enable.idempotence", "true"}, {"linger.ms", "5"}});
  rd_kafka_conf_set_opaque(c, &dr);
  rd_kafka_conf_set_dr_msg_cb(c, &deliveries::on_delivery);
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof err);
  bench::check(rk != nullptr, std::string{"producer: "} + err);
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, "out", nullptr);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::string r = record(i);
    while (rd_kafka_produce(rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, const_cast<char*>(r.data()), r.size(),
                            nullptr, 0, nullptr) != 0) {
      const rd_kafka_resp_err_t e = rd_kafka_last_error();
      bench::check(e == RD_KAFKA_RESP_ERR__QUEUE_FULL, std::string{"produce: "} + rd_kafka_err2str(e));
      (void)rd_kafka_poll(rk, 10);
    }
    if ((i & 1023) == 1023) (void)rd_kafka_poll(rk, 0);
  }
  bench::check(rd_kafka_flush(rk, 60000) == RD_KAFKA_RESP_ERR_NO_ERROR, "flush");
  const double s = sw.seconds();
  bench::check_eq("failed deliveries", 0, dr.failed.load());
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  set.check_out("out", n, false);
  return rate(s, n);
}

bench::sample sink_exactly_once(const bench::params& p) {
  if (p.get("sink") == 0) throw bench::not_available("no exactly-once figure for the source");
  return sink_troupe(p, kafka::delivery::exactly_once);
}

/// Takes --records N (or --records=N) out of the arguments; false on a bad value.
bool take_records_flag(int& argc, char** argv) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a{argv[i]};
    const char* value = nullptr;
    if (a == "--records" && i + 1 < argc) value = argv[++i];
    else if (a.substr(0, 10) == "--records=") value = argv[i] + 10;
    else if (a == "--records") value = "";
    if (value == nullptr) {
      help = help || a == "--help" || a == "-h";
      argv[out++] = argv[i];
      continue;
    }
    char* end = nullptr;
    const long long v = std::strtoll(value, &end, 10);
    if (*value == '\0' || *end != '\0' || v < 1) {
      std::fprintf(stderr, "kafka: --records needs a positive count, not '%s'\n", value);
      return false;
    }
    records_flag = v;
  }
  argc = out;
  argv[out] = nullptr;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (!take_records_flag(argc, argv)) return 2;
  bench::spec s;
  s.name = "kafka";
  s.description = "Kafka source and sink against plain librdkafka loops (mock cluster), 31-byte records, records/s";
  s.impls = {{"troupe",
              [](const bench::params& p) {
                return p.get("sink") == 0 ? source_troupe(p) : sink_troupe(p, kafka::delivery::at_least_once);
              }},
             {"raw", [](const bench::params& p) { return p.get("sink") == 0 ? source_raw(p) : sink_raw(p); }},
             {"exactly_once", sink_exactly_once}};
  s.primary = bench::extra_metric("records_per_s", "records/s", true, "records_per_s");
  s.variants = [](bool full) {
    const std::int64_t n = records_flag > 0 ? records_flag : full ? 1'048'576 : 262'144;
    const std::string count = std::to_string(n) + " records";
    return std::vector<bench::variant>{{"source, " + count, {{"n", n}, {"workers", 1}, {"sink", 0}}},
                                       {"sink, " + count, {{"n", n}, {"workers", 1}, {"sink", 1}}}};
  };
  s.default_runs = 5;
  s.timeout_s = 300;
  const int status = bench::run_main(argc, argv, s);
  if (help) std::printf("  --records N  records per run (default 262144, --full 1048576)\n");
  return status;
}
