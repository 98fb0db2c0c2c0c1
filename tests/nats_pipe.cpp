// nats_pipe: the program the NATS crash tests kill and run again. It reads
// a bounded stream through a durable consumer, tags each message in a farm
// of two, and publishes the result exactly once, with checkpoints:
//   nats_pipe URL IN_STREAM DURABLE OUT_SUBJECT CHECKPOINT_DIR PER_MS
// PER_MS paces the farm (messages per millisecond and replica, 0: no pace)
// so that a run spans many checkpoints. Exits 0 once the stream is read and
// everything is published, 1 with the graph's error on stderr.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "troupe/nats.hpp"
#include "troupe/troupe.hpp"

namespace st = troupe::stream;
namespace nats = troupe::nats;

namespace {
/// Appends ":done" to each message; sleeps 1 ms after each `per_ms`.
struct tag : st::node<std::string, std::string> {
  long per_ms = 0;
  long n = 0;
  explicit tag(long p) : per_ms{p} {}
  void consume(std::string& s) {
    if (per_ms > 0 && ++n % per_ms == 0) std::this_thread::sleep_for(std::chrono::milliseconds{1});
    send_next(s + ":done");
  }
};
}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: nats_pipe URL IN_STREAM DURABLE OUT_SUBJECT CHECKPOINT_DIR PER_MS\n");
    return 2;
  }
  try {
    const nats::connection_config at{.servers = argv[1], .give_up_after = std::chrono::seconds{30}};
    troupe::actor_system sys{troupe::config{.workers = 2}};
    auto g = troupe::spawn_pattern(
        sys,
        troupe::pipeline{nats::text_source({.connection = at, .stream = argv[2], .durable = argv[3], .bounded = true}),
                         troupe::farm{tag{std::stol(argv[6])}, 2},
                         nats::text_sink({.connection = at, .subject = argv[4]})},
        {.checkpoint = {.dir = argv[5], .interval = std::chrono::milliseconds{50}}});
    g.wait();
    if (auto e = g.error()) {
      std::fprintf(stderr, "nats_pipe: %s\n", e.to_string().c_str());
      return 1;
    }
    std::printf("nats_pipe: done\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nats_pipe: %s\n", e.what());
    return 1;
  }
}
