// flink.hpp: what bench_flink_wc and bench_flink_recovery share: where
// bench/flink/setup.sh put Apache Flink, and the word count's input.
#pragma once

#include <sys/wait.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/harness.hpp"

namespace bench::flink {

/// apps/data/book.dat: one copy of the word count's input.
inline const std::string book = TROUPE_APPS_DATA "/book.dat";

/// Words in one copy of the book (split on single spaces, empty tokens
/// skipped, as both jobs do).
inline std::uint64_t words_per_copy() {
  std::ifstream in{book};
  std::uint64_t n = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words{line};
    for (std::string w; std::getline(words, w, ' ');) n += w.empty() ? 0 : 1;
  }
  return n;
}

/// Where bench/flink/setup.sh put Flink (build-flink/, or $TROUPE_FLINK_DIR):
/// the folder, its jars' folder and the job's jar.
struct setup {
  std::string dir, lib, jar;
};

/// The set-up, or bench::not_available when there is none.
inline setup find() {
  const char* root = std::getenv("TROUPE_FLINK_DIR");
  const std::filesystem::path dir =
      root != nullptr ? std::filesystem::path{root} : std::filesystem::path{TROUPE_SOURCE_DIR} / "build-flink";
  setup f;
  f.dir = dir.string();
  std::ifstream lib{dir / "lib_dir"};
  std::getline(lib, f.lib);
  f.jar = (dir / "wc.jar").string();
  if (f.lib.empty() || !std::filesystem::exists(f.jar) || !std::filesystem::exists(f.lib))
    throw bench::not_available("Apache Flink is not set up (scripts/bench --flink sets it up in " + dir.string() + ")");
  return f;
}

/// Writes the book `copies` times into `path` (a newline after each copy):
/// Flink's input, read from a file.
inline void write_copies(const std::string& path, std::int64_t copies) {
  std::ifstream in{book, std::ios::binary};
  const std::string text{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  std::ofstream out{path, std::ios::binary};
  for (std::int64_t i = 0; i < copies; ++i) out << text << (text.empty() || text.back() == '\n' ? "" : "\n");
}

/// Runs the shell command `cmd` with its output into `log`, and returns
/// the output from its last line that starts with `key` on; throws `what`
/// with the exit status and the output's end when the command fails or
/// printed no such line.
inline std::string run_for(const std::string& cmd, const std::string& log, const std::string& key,
                           const std::string& what) {
  const int rc = std::system((cmd + " > '" + log + "' 2>&1").c_str());
  std::ifstream out{log};
  const std::string text{std::istreambuf_iterator<char>{out}, std::istreambuf_iterator<char>{}};
  const auto at = text.rfind(key);
  if (rc != 0 || at == std::string::npos)
    throw std::runtime_error(what + " failed (exit " + std::to_string(WEXITSTATUS(rc)) +
                             "): " + text.substr(text.size() > 2000 ? text.size() - 2000 : 0));
  return text.substr(at);
}

}  // namespace bench::flink
