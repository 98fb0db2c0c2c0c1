// kafka_pipe: the program the Kafka crash test kills and runs again. It
// reads a topic to its end (a bounded source of two replicas), tags each
// record in a farm of two, and writes the result with checkpoints, to a
// file (two-phase commit: exactly once) or to a topic (transactions):
//   kafka_pipe BROKERS IN_TOPIC GROUP OUT CHECKPOINT_DIR PER_MS
// OUT is file:PATH or a topic name. PER_MS paces the farm (records per
// millisecond and replica, 0: no pace) so that a run spans many
// checkpoints. Exits 0 once the topic is read and everything is written, 1
// with the graph's error on stderr.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "troupe/kafka.hpp"
#include "troupe/troupe.hpp"

namespace st = troupe::stream;
namespace kafka = troupe::kafka;

namespace {
/// Appends ":done" to each record; sleeps 1 ms after each `per_ms`.
struct tag : st::node<std::string, std::string> {
  long per_ms = 0;
  long n = 0;
  explicit tag(long p) : per_ms{p} {}
  void consume(std::string& s) {
    if (per_ms > 0 && ++n % per_ms == 0) std::this_thread::sleep_for(std::chrono::milliseconds{1});
    send_next(s + ":done");
  }
};

template <class Sink>
int run(const kafka::source_config& in, Sink out, const std::string& ckpt, long per_ms) {
  troupe::actor_system sys{troupe::config{.workers = 2}};
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{troupe::farm{kafka::text_source(in), 2}, troupe::farm{tag{per_ms}, 2}, std::move(out)},
      {.checkpoint = {.dir = ckpt, .interval = std::chrono::milliseconds{50}}});
  g.wait();
  if (auto e = g.error()) {
    std::fprintf(stderr, "kafka_pipe: %s\n", e.to_string().c_str());
    return 1;
  }
  std::printf("kafka_pipe: done\n");
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: kafka_pipe BROKERS IN_TOPIC GROUP OUT CHECKPOINT_DIR PER_MS\n");
    return 2;
  }
  try {
    const kafka::client_config at{.brokers = argv[1]};
    const kafka::source_config in{.client = at, .topic = argv[2], .group = argv[3], .bounded = true};
    const std::string out = argv[4];
    const long per_ms = std::stol(argv[6]);
    if (out.rfind("file:", 0) == 0) return run(in, st::file_sink(out.substr(5)), argv[5], per_ms);
    return run(in, kafka::text_sink({.client = at, .topic = out}), argv[5], per_ms);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kafka_pipe: %s\n", e.what());
    return 1;
  }
}
