// nats_word_count: words from a NATS JetStream stream counted, the counts
// published to another stream, exactly once through checkpoints.
//   nats_word_count                 starts a nats-server of its own (a demo)
//   NATS_URL=nats://host:4222 nats_word_count
// It makes the streams LINES (subject "lines") and COUNTS ("counts"),
// publishes a few lines, counts their words with a by-key farm, and reads
// the counts back. Run it again: the source goes on after what the last
// run acknowledged, so it counts only the lines published since.
#include <troupe/nats.hpp>
#include <troupe/troupe.hpp>

#include <nats/nats.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace st = troupe::stream;
namespace nats = troupe::nats;

// [nats_nodes]
/// Splits a line into words.
struct split_words : st::node<std::string, std::string> {
  void consume(std::string& line) {
    std::istringstream in{line};
    for (std::string w; in >> w;) send_next(std::move(w));
  }
};

/// Counts each word it owns (by key), in keyed state that checkpoints save,
/// and emits "word count" at each new count.
struct count_words : st::node<std::string, std::string> {
  st::keyed_state<std::string, std::uint64_t>* counts = nullptr;
  void on_start() { counts = &keyed<std::string, std::uint64_t>("counts"); }
  void consume(std::string& w) {
    const auto n = counts->update(w, [](std::uint64_t& c) { return ++c; });
    send_next(w + " " + std::to_string(n));
  }
};
// [/nats_nodes]

namespace {

/// A nats-server with JetStream on a free port, in a temporary directory,
/// for the demo (a real deployment runs its own servers).
struct demo_server {
  pid_t pid = -1;
  std::filesystem::path dir;
  std::string url;
  demo_server() {
    dir = std::filesystem::temp_directory_path() / ("troupe_nats_demo_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir / "ports");
    std::vector<std::string> args{"/usr/sbin/nats-server",
                                  "-js",
                                  "-sd",
                                  (dir / "store").string(),
                                  "-a",
                                  "127.0.0.1",
                                  "-p",
                                  "-1",
                                  "--ports_file_dir",
                                  (dir / "ports").string()};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    for (int i = 0; pid > 0 && url.empty() && i < 500; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
      for (const auto& e : std::filesystem::directory_iterator{dir / "ports"}) {
        std::ifstream in{e.path()};
        std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
        const auto at = text.find("nats://");
        if (at != std::string::npos && text.find('"', at) != std::string::npos)
          url = text.substr(at, text.find('"', at) - at);
      }
    }
  }
  ~demo_server() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
    }
    std::filesystem::remove_all(dir);
  }
};

/// The demo's own set-up with libnats: the two streams and a few lines.
void set_up(const std::string& url, const std::vector<std::string>& lines) {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  if (natsConnection_ConnectTo(&nc, url.c_str()) != NATS_OK || natsConnection_JetStream(&js, nc, nullptr) != NATS_OK)
    throw std::runtime_error{"cannot reach " + url};
  for (auto [name, subject] : {std::pair{"LINES", "lines"}, std::pair{"COUNTS", "counts"}}) {
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = name;
    const char* subjects[] = {subject};
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    js_AddStream(nullptr, js, &sc, nullptr, nullptr);  // already there: fine
  }
  for (const auto& l : lines) js_Publish(nullptr, js, "lines", l.data(), static_cast<int>(l.size()), nullptr, nullptr);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
}

/// Prints what COUNTS holds.
void print_counts(const std::string& url) {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  if (natsConnection_ConnectTo(&nc, url.c_str()) != NATS_OK || natsConnection_JetStream(&js, nc, nullptr) != NATS_OK)
    throw std::runtime_error{"cannot reach " + url};
  jsStreamInfo* si = nullptr;
  if (js_GetStreamInfo(&si, js, "COUNTS", nullptr, nullptr) == NATS_OK) {
    for (std::uint64_t seq = si->State.FirstSeq; seq != 0 && seq <= si->State.LastSeq; ++seq) {
      natsMsg* m = nullptr;
      if (js_GetMsg(&m, js, "COUNTS", seq, nullptr, nullptr) != NATS_OK) continue;
      std::printf("  %.*s\n", natsMsg_GetDataLength(m), natsMsg_GetData(m));
      natsMsg_Destroy(m);
    }
    jsStreamInfo_Destroy(si);
  }
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
}

}  // namespace

int main() {
  std::unique_ptr<demo_server> local;
  std::string url = std::getenv("NATS_URL") != nullptr ? std::getenv("NATS_URL") : "";
  if (url.empty()) {
    if (::access("/usr/sbin/nats-server", X_OK) != 0) {
      std::printf("nats_word_count: no NATS_URL and no nats-server to start (apt install nats-server)\n");
      return 0;
    }
    local = std::make_unique<demo_server>();
    url = local->url;
    if (url.empty()) {
      std::printf("nats_word_count: nats-server did not start\n");
      return 1;
    }
  }
  try {
    set_up(url, {"the quick brown fox", "jumps over the lazy dog", "the end"});
    const auto ckpt = std::filesystem::temp_directory_path() / ("troupe_nats_wc_" + std::to_string(::getpid()));
    // [nats_graph]
    troupe::actor_system sys;
    const nats::connection_config at{.servers = url};
    auto by_word = troupe::by_key{[](const std::string& w) { return w; }};
    auto g = troupe::spawn_pattern(
        sys,
        troupe::pipeline{
            nats::text_source({.connection = at, .stream = "LINES", .durable = "word-count", .bounded = true}),
            split_words{}, troupe::farm{count_words{}, 2, by_word},
            nats::text_sink({.connection = at, .subject = "counts"})},
        {.checkpoint = {.dir = ckpt.string(), .interval = std::chrono::seconds{1}}});
    g.wait();
    // [/nats_graph]
    std::filesystem::remove_all(ckpt);
    std::printf("nats_word_count: the counts in COUNTS on %s:\n", url.c_str());
    print_counts(url);
    return 0;
  } catch (const std::exception& e) {
    std::printf("nats_word_count: %s\n", e.what());
    return 1;
  }
}
