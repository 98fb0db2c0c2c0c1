// nats: the NATS JetStream connectors (troupe::nats) against a plain libnats
// loop on the same server, reading and writing records of 31 bytes.
//
// Each run starts its own nats-server (JetStream, file storage, in a fresh
// directory under $TMPDIR, on a free loopback port) and makes the streams;
// the measured region is the reading or the writing alone.
//   source_troupe  nats::text_source (bounded, batches of 512) -> a sink
//                  counting the records; from spawn to the graph's end (the
//                  last acknowledgement sent)
//   source_raw     libnats: a durable pull consumer (ack policy "all"),
//                  natsSubscription_Fetch of 512 (n is a multiple of 512:
//                  every fetch is full), the last message of each batch
//                  acknowledged
//   sink_troupe    a generator of n records -> nats::text_sink
//                  (at_least_once, no checkpoints); from spawn to the graph's
//                  end (every record acknowledged by the server)
//   sink_raw       libnats: js_PublishAsync of each record, then
//                  js_PublishAsyncComplete (max 65,536 pending, as the sink)
//   sink_exactly_once  as sink_troupe with delivery::exactly_once under
//                  checkpoints every 100 ms (records published when their
//                  checkpoint completes)
// params:
//   n        records (a multiple of 512)
//   workers  the actor system's workers (1: the server, libnats' threads and
//            the connector's own fetching thread share the 2 cores)
// Figure: records_per_s (higher is better).
// Check: the count read (sources) or stored in the stream (sinks) is n.

#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/harness.hpp"
#include "common/temp_dir.hpp"
#include "nats_server.hpp"
#include "troupe/nats.hpp"
#include "troupe/troupe.hpp"

namespace {

namespace nats = troupe::nats;
namespace st = troupe::stream;

std::string record(std::int64_t i) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "record %024lld", static_cast<long long>(i));
  return buf;
}

/// A server of the run's own, and a client that made the streams.
struct setting {
  bench::temp_dir where{"troupe_bench_nats_"};
  nats_support::server server{where.path()};
  nats_support::client client{server.url()};
  setting() {
    client.make_stream("IN", "in");
    client.make_stream("OUT", "out");
  }
  void fill(std::int64_t n) {
    std::vector<std::string> batch;
    for (std::int64_t i = 0; i < n; i += 65536) {
      batch.clear();
      for (std::int64_t j = i; j < std::min(n, i + 65536); ++j) batch.push_back(record(j));
      client.publish("in", batch);
    }
  }
};

bench::sample rate(double s, std::int64_t n) {
  bench::sample out;
  out.wall_s = s;
  out.add("records_per_s", static_cast<double>(n) / s, "records/s", true);
  return out;
}

bench::sample source_troupe(const bench::params& p) {
  const auto n = p.get("n");
  setting set;
  set.fill(n);
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  std::atomic<std::int64_t> seen{0};
  bench::stopwatch sw;
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{
               nats::text_source(
                   {.connection = {.servers = set.server.url()}, .stream = "IN", .durable = "bench", .bounded = true}),
               st::sink([&](const std::string&) { seen.fetch_add(1, std::memory_order_relaxed); })});
  g.wait();
  const double s = sw.seconds();
  bench::check_eq("records read", n, seen.load());
  return rate(s, n);
}

bench::sample source_raw(const bench::params& p) {
  const auto n = p.get("n");
  setting set;
  set.fill(n);
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  bench::check(natsConnection_ConnectTo(&nc, set.server.url().c_str()) == NATS_OK, "connect");
  bench::check(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK, "JetStream");
  jsConsumerConfig cc;
  jsConsumerConfig_Init(&cc);
  cc.Durable = "bench";
  cc.AckPolicy = js_AckAll;
  cc.MaxAckPending = std::int64_t{1} << 40;
  bench::check(js_AddConsumer(nullptr, js, "IN", &cc, nullptr, nullptr) == NATS_OK, "consumer");
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = "IN";
  so.Consumer = "bench";
  natsSubscription* sub = nullptr;
  bench::check(js_PullSubscribe(&sub, js, "in", "bench", nullptr, &so, nullptr) == NATS_OK, "subscribe");
  std::int64_t seen = 0;
  std::size_t bytes = 0;
  bench::stopwatch sw;
  while (seen < n) {
    natsMsgList list{};
    const natsStatus s = natsSubscription_Fetch(&list, sub, 512, 5000, nullptr);
    bench::check(s == NATS_OK, std::string{"fetch: "} + natsStatus_GetText(s));
    for (int i = 0; i < list.Count; ++i) bytes += static_cast<std::size_t>(natsMsg_GetDataLength(list.Msgs[i]));
    seen += list.Count;
    natsMsg_Ack(list.Msgs[list.Count - 1], nullptr);
    natsMsgList_Destroy(&list);
  }
  const double s = sw.seconds();
  bench::check_eq("records read", n, seen);
  bench::check(bytes == static_cast<std::size_t>(n) * 31, "record sizes");
  natsSubscription_Destroy(sub);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  return rate(s, n);
}

bench::sample sink_troupe(const bench::params& p, nats::delivery mode) {
  const auto n = p.get("n");
  setting set;
  const bench::temp_dir ckpt{"troupe_bench_nats_ckpt_"};
  troupe::actor_system sys{troupe::config{.workers = static_cast<std::size_t>(p.get("workers"))}};
  st::options o;
  if (mode == nats::delivery::exactly_once)
    o.checkpoint = {.dir = ckpt.path(), .interval = std::chrono::milliseconds{100}};
  bench::stopwatch sw;
  auto g = troupe::spawn_pattern(
      sys,
      troupe::pipeline{st::generator([n](std::uint64_t i) -> std::optional<std::string> {
                         if (static_cast<std::int64_t>(i) == n) return std::nullopt;
                         return record(static_cast<std::int64_t>(i));
                       }),
                       nats::text_sink({.connection = {.servers = set.server.url()}, .subject = "out", .mode = mode})},
      o);
  g.wait();
  const double s = sw.seconds();
  bench::check_eq("records stored", n, static_cast<std::int64_t>(set.client.count("OUT")));
  return rate(s, n);
}

bench::sample sink_raw(const bench::params& p) {
  const auto n = p.get("n");
  setting set;
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  bench::check(natsConnection_ConnectTo(&nc, set.server.url().c_str()) == NATS_OK, "connect");
  jsOptions o;
  jsOptions_Init(&o);
  o.PublishAsync.MaxPending = 65536;
  bench::check(natsConnection_JetStream(&js, nc, &o) == NATS_OK, "JetStream");
  bench::stopwatch sw;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto r = record(i);
    bench::check(js_PublishAsync(js, "out", r.data(), static_cast<int>(r.size()), nullptr) == NATS_OK, "publish");
  }
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = 60000;
  bench::check(js_PublishAsyncComplete(js, &po) == NATS_OK, "acknowledgements");
  const double s = sw.seconds();
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  bench::check_eq("records stored", n, static_cast<std::int64_t>(set.client.count("OUT")));
  return rate(s, n);
}

}  // namespace

int main(int argc, char** argv) {
  bench::spec s;
  s.name = "nats";
  s.description = "NATS JetStream source and sink against a plain libnats loop, 31-byte records, records/s";
  s.impls = {
      {"source_troupe", source_troupe},
      {"source_raw", source_raw},
      {"sink_troupe", [](const bench::params& p) { return sink_troupe(p, nats::delivery::at_least_once); }},
      {"sink_raw", sink_raw},
      {"sink_exactly_once", [](const bench::params& p) { return sink_troupe(p, nats::delivery::exactly_once); }}};
  s.primary = bench::extra_metric("records_per_s", "records/s", true, "records_per_s");
  s.variants = [](bool full) {
    return std::vector<bench::variant>{
        {full ? "1M records" : "256k records", {{"n", full ? 1'048'576 : 262'144}, {"workers", 1}}}};
  };
  s.default_runs = 5;
  s.timeout_s = 300;
  return bench::run_main(argc, argv, s);
}
