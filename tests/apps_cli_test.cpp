// The application binaries (troupe-wc, -fd, -sd, -lr) run as a user runs
// them: their flags, --help, bad input files, SIGINT/SIGTERM and the progress
// line. Each child writes stdout and stderr to files of the test's own
// directory; every wait is bounded (a hang guard, not a timing assertion) and
// a child still running when its test ends is killed and reaped.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child_process.hpp"

extern char** environ;

namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Longer than any of these runs should take on a loaded machine, shorter
// than the 30 s runs that a signal must cut short.
constexpr auto hang_guard = 20s;

const std::map<std::string, std::string> binaries{
    {"wc", TROUPE_WC_BIN}, {"fd", TROUPE_FD_BIN}, {"sd", TROUPE_SD_BIN}, {"lr", TROUPE_LR_BIN}};

std::string slurp(const std::string& path) {
  std::ifstream f{path, std::ios::binary};
  return {std::istreambuf_iterator<char>{f}, std::istreambuf_iterator<char>{}};
}

/// A running application binary; killed (SIGKILL) and reaped on destruction
/// if it has not been waited for.
class child {
 public:
  /// stdout and stderr go to `dir`/<name>.out and .err; stderr goes to
  /// `stderr_fd` instead when it is >= 0 (a terminal).
  child(const std::string& app, std::vector<std::string> args, const fs::path& dir, int stderr_fd = -1)
      : out_{(dir / "child.out").string()}, err_{(dir / "child.err").string()} {
    args.insert(args.begin(), binaries.at(app));
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (stderr_fd >= 0) posix_spawn_file_actions_adddup2(&fa, stderr_fd, 2);
    else posix_spawn_file_actions_addopen(&fa, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    // The child starts with SIGINT and SIGTERM unblocked and at their defaults.
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &defaults);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    const int rc = posix_spawn(&pid_, argv[0], &fa, &at, argv.data(), environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      pid_ = -1;
      ADD_FAILURE() << "cannot start " << argv[0] << ": " << std::strerror(rc);
    }
  }
  ~child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status_, 0);
    }
  }
  child(const child&) = delete;
  child& operator=(const child&) = delete;

  /// Waits for the exit, calling `pump` meanwhile; false (and the child
  /// killed) if it has not exited within `limit`.
  template <class Pump>
  bool wait(std::chrono::milliseconds limit, Pump pump) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (pid_ > 0) {
      pump();
      const pid_t r = ::waitpid(pid_, &status_, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        pump();
        return true;
      }
      if (std::chrono::steady_clock::now() > until) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status_, 0);
        pid_ = -1;
        ADD_FAILURE() << "the child did not exit within the hang guard; killed it";
        return false;
      }
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }
  bool wait(std::chrono::milliseconds limit = hang_guard) {
    return wait(limit, [] {});
  }
  /// Whether it exits within `limit` (it runs on otherwise).
  bool exits_within(std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (pid_ > 0 && std::chrono::steady_clock::now() < until) {
      if (::waitpid(pid_, &status_, WNOHANG) == pid_) pid_ = -1;
      else std::this_thread::sleep_for(5ms);
    }
    return pid_ <= 0;
  }
  /// The exit status, or -1 when it did not exit normally (killed by a signal).
  int exit_code() const { return WIFEXITED(status_) ? WEXITSTATUS(status_) : -1; }
  std::string out() const { return slurp(out_); }
  std::string err() const { return slurp(err_); }
  pid_t pid() const { return pid_; }

  /// Waits (bounded) until the child catches `sig` (its handler is installed).
  bool catches(int sig) const {
    const auto until = std::chrono::steady_clock::now() + hang_guard;
    while (std::chrono::steady_clock::now() < until) {
      std::ifstream f{"/proc/" + std::to_string(pid_) + "/status"};
      for (std::string line; std::getline(f, line);)
        if (line.rfind("SigCgt:", 0) == 0 && (std::stoull(line.substr(7), nullptr, 16) >> (sig - 1) & 1) != 0)
          return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  std::string out_, err_;
};

/// Each test gets a fresh directory, removed at its end.
class apps_cli_binary : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::path{::testing::TempDir()} / "troupe_apps_cli_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }
  std::string file(const std::string& name, const std::string& text) const {
    const auto path = (dir_ / name).string();
    std::ofstream{path, std::ios::binary} << text;
    return path;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  /// Runs an app to its end (bounded): {exit code, stdout, stderr}.
  struct result {
    int code;
    std::string out, err;
  };
  result run(const std::string& app, std::vector<std::string> args) const {
    child c{app, std::move(args), dir_};
    c.wait();
    return {c.exit_code(), c.out(), c.err()};
  }

  fs::path dir_;
};

// A number in a JSON object of numbers: "key":value.
double json_number(const std::string& json, const std::string& key) {
  const auto at = json.find('"' + key + "\":");
  if (at == std::string::npos) return -1;
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr);
}

}  // namespace

TEST_F(apps_cli_binary, duration_zero_is_a_usage_error) {
  for (auto& [app, bin] : binaries) {
    SCOPED_TRACE(app);
    auto r = run(app, {"--duration", "0"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("--duration: must be greater than 0, got '0'"), std::string::npos) << r.err;
    r = run(app, {"--passes", "1", "--duration", "0"});
    EXPECT_EQ(r.code, 2);
  }
}

TEST_F(apps_cli_binary, passes_zero_is_a_usage_error) {
  for (auto& [app, bin] : binaries) {
    SCOPED_TRACE(app);
    auto r = run(app, {"--passes", "0"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("--passes: must be at least 1"), std::string::npos) << r.err;
  }
}

TEST_F(apps_cli_binary, help_lists_every_flag_with_its_default) {
  const std::set<std::string> common{"--duration",
                                     "--rate",
                                     "--parallelism",
                                     "--input",
                                     "--max-line",
                                     "--batch",
                                     "--json",
                                     "--passes",
                                     "--output",
                                     "--help",
                                     "--metrics-port",
                                     "--checkpoint-dir",
                                     "--checkpoint-interval",
                                     "--state-backend"};
  std::map<std::string, std::set<std::string>> own{{"wc", {}},
                                                   {"fd", {"--model", "--generate", "--lines"}},
                                                   {"sd", {"--window", "--threshold", "--generate", "--lines"}},
                                                   {"lr", {"--minutes", "--xways", "--generate"}}};
#if TROUPE_APPS_SPLIT
  for (const char* app : {"wc", "fd"})  // they run split across processes too
    own[app].insert({"--peers", "--rank", "--placement", "--keys", "--security", "--peer-timeout"});
#endif
  for (auto& [app, bin] : binaries) {
    SCOPED_TRACE(app);
    auto r = run(app, {"--help"});
    EXPECT_EQ(r.code, 0);
    auto want = common;
    want.insert(own.at(app).begin(), own.at(app).end());
    std::set<std::string> listed;
    std::istringstream in{r.out};
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("  --", 0) != 0) continue;
      const auto name = line.substr(2, line.find(' ', 2) - 2);
      listed.insert(name);
      if (name != "--help") {
        EXPECT_NE(line.find("(default: "), std::string::npos) << line;
      }
      // A description follows the flag and its value.
      EXPECT_GT(line.size(), 30u) << line;
    }
    EXPECT_EQ(listed, want) << r.out;
  }
}

TEST_F(apps_cli_binary, unknown_flag_given_last_is_named) {
  for (auto& [app, bin] : binaries) {
    SCOPED_TRACE(app);
    auto r = run(app, {"--passes", "1", "--frobnicate"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("unknown flag '--frobnicate'"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("missing value"), std::string::npos) << r.err;
  }
  // Another application's flag is unknown too.
  auto r = run("wc", {"--model", "x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown flag '--model'"), std::string::npos) << r.err;
}

TEST_F(apps_cli_binary, a_value_may_be_joined_with_equals) {
  const auto in = file("words.txt", "a b a\nc\n");
  auto r = run("wc", {"--input=" + in, "--passes=2", "--json=" + path("r.json")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json_number(slurp(path("r.json")), "source_tuples"), 4);
}

TEST_F(apps_cli_binary, directory_input_is_named_as_a_directory) {
  const auto d = path("a_directory");
  fs::create_directory(d);
  for (auto& [app, bin] : binaries) {
    SCOPED_TRACE(app);
    auto r = run(app, {"--input", d, "--passes", "1"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("input file '" + d + "' is a directory"), std::string::npos) << r.err;
  }
  auto r = run("fd", {"--model", d, "--passes", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("model file '" + d + "' is a directory"), std::string::npos) << r.err;
}

TEST_F(apps_cli_binary, binary_input_is_rejected_naming_the_file) {
  const std::string exe = TROUPE_WC_BIN;
  auto r = run("wc", {"--input", exe, "--passes", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("input file '" + exe + "' is not a text file (a NUL byte on line 1)"), std::string::npos)
      << r.err;
  const auto nul = file("nul.txt", std::string{"one\ntwo\nthr\0ee\n", 15});
  for (auto& [app, bin] : binaries) {
    SCOPED_TRACE(app);
    r = run(app, {"--input", nul, "--passes", "1"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("input file '" + nul + "' is not a text file (a NUL byte on line 3)"), std::string::npos)
        << r.err;
  }
}

TEST_F(apps_cli_binary, missing_and_empty_input_are_named) {
  const auto missing = path("no_such_file.txt");
  auto r = run("wc", {"--input", missing, "--passes", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("input file '" + missing + "': cannot read it: No such file or directory"), std::string::npos)
      << r.err;
  const auto empty = file("empty.txt", "");
  r = run("sd", {"--input", empty, "--passes", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("input file '" + empty + "' is empty"), std::string::npos) << r.err;
}

TEST_F(apps_cli_binary, unreadable_input_is_named_with_the_reason) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their permissions";
  const auto locked = file("locked.txt", "a b\n");
  fs::permissions(locked, fs::perms::none);
  auto r = run("wc", {"--input", locked, "--passes", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("input file '" + locked + "': cannot read it: Permission denied"), std::string::npos) << r.err;
}

TEST_F(apps_cli_binary, an_over_long_line_is_an_error_naming_file_and_line) {
  // 2 MiB on line 3: over the 1 MiB default.
  const auto big = file("big.txt", "a b\nc\n" + std::string(std::size_t{2} << 20, 'x') + "\nd\n");
  for (auto& [app, bin] : binaries) {
    SCOPED_TRACE(app);
    auto r = run(app, {"--input", big, "--duration", "1"});
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("input file '" + big + "', line 3: longer than 1048576 bytes (the --max-line limit)"),
              std::string::npos)
        << r.err;
  }
  // --max-line sets the limit; a line of exactly the limit is accepted (a
  // CRLF line end is not counted).
  const auto small = file("small.txt", "abcd\r\nab cd\r\nabcdef\n");
  auto r = run("wc", {"--input", small, "--passes", "1", "--max-line", "5"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("input file '" + small + "', line 3: longer than 5 bytes (the --max-line limit)"),
            std::string::npos)
      << r.err;
  r = run("wc", {"--input", small, "--passes", "1", "--max-line", "6"});
  EXPECT_EQ(r.code, 0) << r.err;
  r = run("wc", {"--input", small, "--passes", "1", "--max-line", "0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--max-line: must be at least 1"), std::string::npos) << r.err;
}

TEST_F(apps_cli_binary, a_signal_drains_the_graph_prints_the_summary_and_writes_the_results) {
  struct run_case {
    std::string app;
    int sig;
    std::string rate;
  };
  for (auto& k : {run_case{"wc", SIGINT, "20000"}, run_case{"fd", SIGTERM, "100000"}, run_case{"sd", SIGINT, "100000"},
                  run_case{"lr", SIGINT, "100000"}}) {
    SCOPED_TRACE(k.app);
    const auto json = path(k.app + ".json"), output = path(k.app + ".out");
    fs::remove(json);
    fs::remove(output);
    child c{k.app, {"--duration", "30", "--rate", k.rate, "--json", json, "--output", output}, dir_};
    ASSERT_TRUE(c.catches(k.sig));
    // The graph runs once something has reached the --output file.
    const auto until = std::chrono::steady_clock::now() + hang_guard;
    while (std::chrono::steady_clock::now() < until && (!fs::exists(output) || fs::file_size(output) == 0))
      std::this_thread::sleep_for(5ms);
    ASSERT_GT(fs::file_size(output), 0u);
    ::kill(c.pid(), k.sig);
    ASSERT_TRUE(c.wait());
    EXPECT_EQ(c.exit_code(), 128 + k.sig);
    const auto out = c.out();
    EXPECT_NE(out.find("latency (us):"), std::string::npos) << out;
    EXPECT_NE(out.find(", interrupted"), std::string::npos) << out;
    EXPECT_NE(c.err().find("interrupted: stopping the sources and draining the graph"), std::string::npos) << c.err();
    const auto j = slurp(json);
    EXPECT_NE(j.find("\"app\":\"" + k.app + "\""), std::string::npos) << j;
    EXPECT_NE(j.find("\"interrupted\":true"), std::string::npos) << j;
    EXPECT_GT(json_number(j, "source_tuples"), 0) << j;
    EXPECT_GT(json_number(j, "sink_tuples"), 0) << j;
    if (k.app == "wc") {
      EXPECT_NE(slurp(output).find("# final counts\n"), std::string::npos);
    }
  }
}

TEST_F(apps_cli_binary, a_second_signal_exits_at_once_writing_nothing) {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer defers a handler until its thread next enters an
  // intercepted call, so two signals sent together are not handled
  // together: the drain of the first may finish before the second is seen.
  GTEST_SKIP() << "signal handlers run deferred under ThreadSanitizer";
#endif
  const auto json = path("wc.json"), output = path("wc.out");
  child c{"wc", {"--duration", "30", "--rate", "20000", "--json", json, "--output", output}, dir_};
  ASSERT_TRUE(c.catches(SIGINT));
  ASSERT_TRUE(c.catches(SIGTERM));
  // Stopped, the child gets both signals before it can drain: the first
  // starts the drain, the second ends the process in its handler.
  ::kill(c.pid(), SIGSTOP);
  ::kill(c.pid(), SIGINT);
  ::kill(c.pid(), SIGTERM);
  ::kill(c.pid(), SIGCONT);
  ASSERT_TRUE(c.wait());
  EXPECT_TRUE(c.exit_code() == 128 + SIGINT || c.exit_code() == 128 + SIGTERM) << c.exit_code();
  EXPECT_EQ(c.out().find("latency"), std::string::npos) << c.out();
  EXPECT_NE(c.err().find("interrupted again: exiting now, writing nothing"), std::string::npos) << c.err();
  EXPECT_EQ(slurp(json), "");
}

TEST_F(apps_cli_binary, a_progress_line_only_on_a_terminal) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0) << std::strerror(errno);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  const int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(slave, 0) << std::strerror(errno);
  ::fcntl(master, F_SETFL, ::fcntl(master, F_GETFL) | O_NONBLOCK);
  ::fcntl(master, F_SETFD, FD_CLOEXEC);
  std::string terminal;
  {
    child c{"wc", {"--duration", "3", "--rate", "1000"}, dir_, slave};
    ::close(slave);
    c.wait(hang_guard, [&] {
      char buf[4096];
      for (ssize_t n; (n = ::read(master, buf, sizeof buf)) > 0;) terminal.append(buf, static_cast<std::size_t>(n));
    });
    EXPECT_EQ(c.exit_code(), 0);
  }
  ::close(master);
  EXPECT_NE(terminal.find("\rwc: "), std::string::npos) << terminal;
  EXPECT_NE(terminal.find(" s, source "), std::string::npos) << terminal;
  EXPECT_NE(terminal.find(" tuples, sink "), std::string::npos) << terminal;
  // Not a terminal: nothing on stderr.
  auto r = run("wc", {"--duration", "2", "--rate", "1000"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.err, "");
}

#if TROUPE_APPS_SPLIT

namespace {

using child_process::free_ports;

/// The lines of a file, sorted (a farm's sink replicas interleave them).
std::vector<std::string> sorted_lines(const std::string& path) {
  std::istringstream in{slurp(path)};
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::sort(lines.begin(), lines.end());
  return lines;
}

}  // namespace

class apps_split : public apps_cli_binary {
 protected:
  /// Runs `app` once in one process and once split over two (rank 0 and
  /// rank 1 at once), every run with --passes 1 and --output; the split
  /// run's output is that of the rank given by `sink_rank`.
  /// rank_from_env: each rank learns its rank from SLURM_PROCID, as under
  /// srun, instead of --rank.
  void expect_same_results(const std::string& app, const std::vector<std::string>& flags, const std::string& placement,
                           std::vector<std::string> security, bool rank_from_env = false) {
    std::vector<std::string> one = flags;
    one.insert(one.end(), {"--passes", "1", "--output", path("one.txt")});
    auto single = run(app, one);
    ASSERT_EQ(single.code, 0) << single.err;
    // A port picked free may be taken by another process before a rank binds
    // it: that run (only) is retried with other ports.
    for (int attempt = 0;; ++attempt) {
      const auto ports = free_ports(2);
      const std::string peers =
          "tcp://127.0.0.1:" + std::to_string(ports[0]) + ",tcp://127.0.0.1:" + std::to_string(ports[1]);
      std::vector<std::unique_ptr<child>> ranks;
      for (int r = 0; r < 2; ++r) {
        std::vector<std::string> args = flags;
        args.insert(args.end(), {"--passes", "1", "--peers", peers, "--placement", placement, "--output",
                                 path("rank" + std::to_string(r) + ".txt")});
        if (!rank_from_env) args.insert(args.end(), {"--rank", std::to_string(r)});
        args.insert(args.end(), security.begin(), security.end());
        fs::create_directories(dir_ / ("r" + std::to_string(r)));
        if (rank_from_env) ::setenv("SLURM_PROCID", std::to_string(r).c_str(), 1);
        ranks.push_back(std::make_unique<child>(app, args, dir_ / ("r" + std::to_string(r))));
        ::unsetenv("SLURM_PROCID");
      }
      bool port_taken = false;
      for (int r = 0; r < 2; ++r) {
        ASSERT_TRUE(ranks[r]->wait()) << "rank " << r;
        port_taken = port_taken || ranks[r]->err().find("cannot listen at") != std::string::npos;
      }
      if (port_taken && attempt < 2) continue;
      for (int r = 0; r < 2; ++r) {
        EXPECT_EQ(ranks[r]->exit_code(), 0) << "rank " << r << ": " << ranks[r]->err();
        EXPECT_NE(ranks[r]->out().find("rank " + std::to_string(r) + " of 2"), std::string::npos) << ranks[r]->out();
      }
      break;
    }
    // What reached the sinks, and (wc) the final counts: the one-process
    // run's, split between the ranks' output files as the placement put
    // the sinks and counters.
    auto a = sorted_lines(path("one.txt"));
    auto b = sorted_lines(path("rank0.txt"));
    auto c = sorted_lines(path("rank1.txt"));
    b.insert(b.end(), c.begin(), c.end());
    std::sort(b.begin(), b.end());
    b.erase(std::remove(b.begin(), b.end(), "# final counts"), b.end());
    a.erase(std::remove(a.begin(), a.end(), "# final counts"), a.end());
    EXPECT_GT(a.size(), 1000u);
    EXPECT_EQ(a, b);
  }
};

TEST_F(apps_split, wc_split_over_two_processes_gives_the_one_process_results) {
  // The counters by word across both ranks (by key, one word to one replica).
  expect_same_results("wc", {"--parallelism", "1,2,4,1"}, "0;0;0,1;1", {"--security", "plaintext"});
}

TEST_F(apps_split, fd_split_over_two_processes_gives_the_one_process_results) {
  expect_same_results("fd", {"--parallelism", "1,3,1"}, "0;1,0;1", {"--security", "plaintext"});
}

TEST_F(apps_split, a_split_run_is_encrypted_by_default_and_takes_its_rank_from_the_launcher) {
  fs::create_directories(dir_ / "keys");
  for (int r = 0; r < 2; ++r) {
    const std::string base = (dir_ / "keys" / ("rank" + std::to_string(r))).string();
    ASSERT_EQ(std::system((std::string{TROUPE_KEYGEN_BIN} + " " + base + " > /dev/null").c_str()), 0);
  }
  expect_same_results("wc", {"--parallelism", "1,1,1,1"}, "0;0;1;1", {"--keys", (dir_ / "keys").string()}, true);
}

TEST_F(apps_split, bad_split_flags_are_named) {
  const std::string two = "tcp://127.0.0.1:1,tcp://127.0.0.1:2";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--peers", "tcp://127.0.0.1:1"}, "--peers: a split run needs two endpoints or more"},
      {{"--peers", "127.0.0.1:1,127.0.0.1:2", "--rank", "0"}, "is not an endpoint"},
      {{"--peers", two}, "give --rank"},
      {{"--peers", two, "--rank", "2"}, "--rank"},
      {{"--peers", two, "--rank", "0", "--placement", "0;x"}, "--placement"},
      {{"--peers", two, "--rank", "0", "--placement", "0;3"}, "names rank 3"},
      {{"--peers", two, "--rank", "0"}, "--keys: a split run is encrypted"},
      {{"--peers", two, "--rank", "0", "--keys", "/nonexistent"}, "--keys"},
      {{"--peers", two, "--rank", "0", "--peer-timeout", "5"}, "--peer-timeout"},
      {{"--peers", two, "--rank", "0", "--security", "none"}, "--security"},
  };
  for (auto& [args, says] : cases) {
    auto r = run("fd", args);
    EXPECT_EQ(r.code, 2) << says;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
  auto r = run("sd", {"--peers", two, "--rank", "0"});  // sd has no split flags
  EXPECT_EQ(r.code, 2);
}

#endif

// ---- checkpoints: killed runs, rerun with the same flags (docs/fault-tolerance.md)

/// An application killed (SIGKILL) at random points, each time rerun with
/// the same flags, then run to its end: its --output must be byte for byte
/// that of a run without failures. The kills fall anywhere in a run: at
/// start-up and recovery, between and during checkpoint writes, near the end.
class apps_chaos : public apps_cli_binary {
 protected:
  static bool has_checkpoint(const std::string& dir) {
    std::error_code ec;
    for (fs::directory_iterator it{dir, ec}, end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".troupe") return true;
    return false;
  }
  /// `checkpointed`: flags for the runs with a checkpoint directory only;
  /// `varied`: more flags for each of those, by its number (0: the last).
  /// Returns the standard error of every checkpointed run.
  std::string killed_and_rerun(const std::string& app, std::vector<std::string> args, int kills_wanted,
                               const std::vector<std::string>& checkpointed = {},
                               const std::function<std::vector<std::string>(int)>& varied = {}) {
    auto with = [&](std::vector<std::string> more) {
      auto all = args;
      all.insert(all.end(), more.begin(), more.end());
      return all;
    };
    const auto started = std::chrono::steady_clock::now();
    auto ref = run(app, with({"--output", path("expected.txt")}));
    EXPECT_EQ(ref.code, 0) << ref.err;
    if (ref.code != 0) return {};
    const auto span = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
    auto flags = with({"--output", path("out.txt"), "--checkpoint-dir", path("ckpt"), "--checkpoint-interval", "15"});
    flags.insert(flags.end(), checkpointed.begin(), checkpointed.end());
    const auto run_flags = [&](int n) {
      auto all = flags;
      if (varied) {
        const auto more = varied(n);
        all.insert(all.end(), more.begin(), more.end());
      }
      return all;
    };
    std::string errs;
    std::mt19937 rng{std::random_device{}()};
    std::uniform_int_distribution<long> when{0, std::max<long>(30, span.count())};
    int kills = 0, resumed = 0;
    for (int attempt = 0; attempt < 4 * kills_wanted && kills < kills_wanted; ++attempt) {
      child c{app, run_flags(attempt + 1), dir_};
      if (attempt == 0) {
        // The first kill waits for a checkpoint (bounded): so that the runs
        // after it resume, however early the random kills fall.
        const auto until = std::chrono::steady_clock::now() + 4 * span + std::chrono::seconds{1};
        while (std::chrono::steady_clock::now() < until && !has_checkpoint(path("ckpt")))
          std::this_thread::sleep_for(std::chrono::milliseconds{2});
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds{when(rng)});
      }
      ::kill(c.pid(), SIGKILL);
      EXPECT_TRUE(c.wait());
      errs += c.err();
      if (c.exit_code() == -1) ++kills;
      else EXPECT_EQ(c.exit_code(), 0) << c.err();  // it had ended before the kill
      if (c.err().find("resumed from checkpoint") != std::string::npos) ++resumed;
    }
    EXPECT_EQ(kills, kills_wanted);
    auto last = std::make_unique<child>(app, run_flags(0), dir_);
    EXPECT_TRUE(last->wait());
    // A checkpoint taken after a replica of a varied stage had finished can
    // only resume with that stage's replica count (the engine says so and
    // exits 2): the next variations come to it, as a user would.
    for (int k = 1; varied && k <= 3 && last->exit_code() == 2 &&
                    last->err().find("had finished (resume with its") != std::string::npos;
         ++k) {
      errs += last->err();
      last = std::make_unique<child>(app, run_flags(k), dir_);
      EXPECT_TRUE(last->wait());
    }
    errs += last->err();
    EXPECT_EQ(last->exit_code(), 0) << last->err();
    if (last->err().find("resumed from checkpoint") != std::string::npos) ++resumed;
    EXPECT_GT(resumed, 0) << "no run resumed from a checkpoint: the kills fell too early or too late";
    const auto expected = slurp(path("expected.txt")), got = slurp(path("out.txt"));
    EXPECT_FALSE(expected.empty());
    if (varied)  // several replicas of an operator interleave its lines in any order: compare them sorted
      EXPECT_TRUE(sorted_lines(path("out.txt")) == sorted_lines(path("expected.txt")))
          << "the output after " << kills << " kills, sorted, differs from a run without failures";
    else
      EXPECT_TRUE(got == expected) << "the output after " << kills << " kills differs from a run without failures ("
                                   << got.size() << " bytes against " << expected.size() << ")";
    for (auto& e : fs::directory_iterator{dir_})
      EXPECT_EQ(e.path().string().find(".part-"), std::string::npos) << "a part file is left: " << e.path();
    return errs;
  }
};

TEST_F(apps_chaos, fd_killed_20_times_and_rerun_writes_the_output_of_a_run_without_failures) {
  ASSERT_EQ(run("fd", {"--generate", path("tx.txt"), "--lines", "100000"}).code, 0);
  killed_and_rerun("fd", {"--input", path("tx.txt"), "--passes", "20"}, 20);
}

TEST_F(apps_chaos, wc_killed_20_times_and_rerun_writes_the_output_of_a_run_without_failures) {
  killed_and_rerun("wc", {"--passes", "30"}, 20);
}

TEST_F(apps_chaos,
       wc_with_its_counts_in_rocksdb_killed_10_times_and_rerun_writes_the_output_of_a_run_without_failures) {
#if TROUPE_APPS_ROCKSDB
  killed_and_rerun("wc", {"--passes", "30"}, 10, {"--state-backend", "rocksdb"});
#else
  GTEST_SKIP() << "troupe::rocksdb is not built";
#endif
}

TEST_F(apps_chaos, wc_killed_and_rerun_with_other_counter_replicas_writes_the_output_of_a_run_without_failures) {
  // Each rerun with 1, 2 or 3 counters: their keyed state is split anew.
  const auto errs = killed_and_rerun("wc", {"--passes", "30"}, 8, {}, [](int n) {
    return std::vector<std::string>{"--parallelism", "1,1," + std::to_string(1 + n % 3) + ",1"};
  });
  EXPECT_NE(errs.find("wc: rescaled 'counter'"), std::string::npos) << errs;
}

TEST_F(apps_chaos, checkpoint_flags_are_checked) {
  auto r = run("wc", {"--checkpoint-dir", path("c"), "--duration", "1"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--checkpoint-dir: needs --passes"), std::string::npos) << r.err;
  r = run("wc", {"--checkpoint-dir", path("c"), "--passes", "1", "--checkpoint-interval", "0"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--checkpoint-interval"), std::string::npos) << r.err;
  r = run("wc", {"--checkpoint-dir", path("c"), "--passes", "1", "--state-backend", "lmdb"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--state-backend: expected heap or rocksdb, got 'lmdb'"), std::string::npos) << r.err;
  r = run("wc", {"--passes", "1", "--state-backend", "rocksdb"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--state-backend: needs --checkpoint-dir"), std::string::npos) << r.err;
}

TEST_F(apps_chaos, sd_killed_5_times_and_rerun_writes_the_output_of_a_run_without_failures) {
  // The moving averages by device are the state: a reading counted twice
  // or lost shifts every later average, and the spikes with it.
  ASSERT_EQ(run("sd", {"--generate", path("readings.txt"), "--lines", "100000"}).code, 0);
  killed_and_rerun("sd", {"--input", path("readings.txt"), "--passes", "10", "--threshold", "0.01"}, 5);
}

TEST_F(apps_chaos, lr_killed_5_times_and_rerun_writes_the_output_of_a_run_without_failures) {
  // Every operator's open minutes, the end-of-minute markers each has
  // counted, and the sink's join are the state; the tolls are the output.
  killed_and_rerun("lr", {"--minutes", "40", "--passes", "2"}, 5);
}

#if TROUPE_APPS_SPLIT

/// troupe-wc split over two processes, every rank with the same checkpoint
/// directory. In each round a random rank, or both at once (a machine), is
/// killed (SIGKILL) at a random point; the survivor ends on its own, with an
/// error naming the lost rank and the last completed checkpoint; then both
/// are rerun with the same flags. After 20 kills and a run to the end, the
/// ranks' outputs hold exactly the lines of a run without failures (the
/// one-process run's, split between them as the placement puts the sinks
/// and counters).
TEST_F(apps_chaos, split_wc_with_its_ranks_killed_20_times_and_rerun_writes_the_output_of_a_run_without_failures) {
  const std::vector<std::string> common{"--passes", "10", "--parallelism", "1,2,4,1"};
  auto one = common;
  one.insert(one.end(), {"--output", path("one.txt")});
  ASSERT_EQ(run("wc", one).code, 0);
  auto start = [&](int r, const std::string& peers) {
    auto args = common;
    args.insert(args.end(),
                {"--peers", peers, "--rank", std::to_string(r), "--placement", "0;0;0,1;1", "--security", "plaintext",
                 "--peer-timeout", "1000", "--output", path("rank" + std::to_string(r) + ".txt"), "--checkpoint-dir",
                 path("ckpt"), "--checkpoint-interval", "15"});
    fs::create_directories(dir_ / ("r" + std::to_string(r)));
    return std::make_unique<child>("wc", args, dir_ / ("r" + std::to_string(r)));
  };
  auto peers_now = [] {
    const auto p = free_ports(2);
    return "tcp://127.0.0.1:" + std::to_string(p[0]) + ",tcp://127.0.0.1:" + std::to_string(p[1]);
  };
  // A run without failures gives the span the kills fall in.
  const auto began = std::chrono::steady_clock::now();
  {
    const auto peers = peers_now();
    auto r0 = start(0, peers), r1 = start(1, peers);
    ASSERT_TRUE(r0->wait());
    ASSERT_TRUE(r1->wait());
  }
  const auto span = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began);
  std::mt19937 rng{std::random_device{}()};
  std::uniform_int_distribution<long> when{0, std::max<long>(30, span.count())};
  int kills = 0, resumed = 0, named = 0, unmet = 0;
  for (int round = 0; round < 80 && kills < 20; ++round) {
    const auto peers = peers_now();
    std::vector<std::unique_ptr<child>> ranks;
    for (int r = 0; r < 2; ++r) ranks.push_back(start(r, peers));
    std::this_thread::sleep_for(std::chrono::milliseconds{when(rng)});
    const int victim = round % 2 == 0 ? -1 : static_cast<int>(rng() % 2);  // -1: both
    for (int r = 0; r < 2; ++r)
      if (victim < 0 || r == victim) ::kill(ranks[r]->pid(), SIGKILL);
    // A survivor loses its peer within --peer-timeout; one that never met
    // it (killed before they connected) waits for it to start for the
    // cluster's connect timeout (20 s), as peers that start in any order
    // must: that one is killed too.
    bool survived = false;
    if (victim >= 0 && !ranks[1 - victim]->exits_within(5s)) {
      ::kill(ranks[1 - victim]->pid(), SIGKILL);
      ++unmet;
    } else {
      survived = victim >= 0;
    }
    bool port_taken = false;
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(ranks[r]->wait());
      const auto err = ranks[r]->err();
      port_taken = port_taken || err.find("cannot listen at") != std::string::npos;
      if (err.find("resumed from checkpoint") != std::string::npos) ++resumed;
    }
    if (port_taken) continue;
    if (ranks[0]->exit_code() == -1 || ranks[1]->exit_code() == -1) ++kills;
    if (survived && ranks[victim]->exit_code() == -1 && ranks[1 - victim]->exit_code() != 0) {
      const auto err = ranks[1 - victim]->err();
      EXPECT_NE(err.find("rank " + std::to_string(victim)), std::string::npos) << err;
      if (err.find("last completed checkpoint is") != std::string::npos) ++named;
    }
  }
  EXPECT_EQ(kills, 20);
  std::printf(
      "split wc: %d kills over a span of %lld ms; %d runs resumed; %d survivors named the last checkpoint, %d "
      "never met their peer\n",
      kills, static_cast<long long>(span.count()), resumed, named, unmet);
  for (int attempt = 0;; ++attempt) {
    const auto peers = peers_now();
    auto r0 = start(0, peers), r1 = start(1, peers);
    ASSERT_TRUE(r0->wait());
    ASSERT_TRUE(r1->wait());
    if (attempt < 2 && (r0->err() + r1->err()).find("cannot listen at") != std::string::npos) continue;
    EXPECT_EQ(r0->exit_code(), 0) << r0->err();
    EXPECT_EQ(r1->exit_code(), 0) << r1->err();
    if ((r0->err() + r1->err()).find("resumed from checkpoint") != std::string::npos) ++resumed;
    break;
  }
  EXPECT_GT(resumed, 0) << "no run resumed from a checkpoint: the kills fell too early or too late";
  EXPECT_GT(named, 0) << "no survivor named the last completed checkpoint";
  auto expected = sorted_lines(path("one.txt"));
  auto got = sorted_lines(path("rank0.txt"));
  const auto more = sorted_lines(path("rank1.txt"));
  got.insert(got.end(), more.begin(), more.end());
  std::sort(got.begin(), got.end());
  got.erase(std::remove(got.begin(), got.end(), "# final counts"), got.end());
  expected.erase(std::remove(expected.begin(), expected.end(), "# final counts"), expected.end());
  EXPECT_GT(expected.size(), 1000u);
  EXPECT_TRUE(got == expected) << "the outputs after " << kills << " kills differ from a run without failures ("
                               << got.size() << " lines against " << expected.size() << ")";
  EXPECT_TRUE(fs::is_empty(path("ckpt"))) << "a job that ended normally keeps no checkpoints";
  for (auto& e : fs::recursive_directory_iterator{dir_})
    EXPECT_EQ(e.path().string().find(".part-"), std::string::npos) << "a part file is left: " << e.path();
}

#endif
