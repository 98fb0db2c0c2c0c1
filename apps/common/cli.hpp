// cli.hpp: the flags every streaming application takes, parsed and checked,
// and the reading of its input files.
//   --duration SECONDS   run this long (> 0; default 10 unless --passes is given)
//   --rate N             tuples per second per source replica (0 = full speed)
//   --parallelism a,b,.. replicas per operator, in graph order
//   --input PATH         input file (loaded into memory, replayed cyclically)
//   --max-line BYTES     longest input line accepted (default 1 MiB)
//   --batch N            elements a node handles per activation
//   --json PATH          results file
//   --passes N           replay the input N times (>= 1), then end of stream
//   --output PATH        what reaches the sink, one tuple per line
//   --checkpoint-dir PATH, --checkpoint-interval MS, --state-backend NAME
//                        checkpoints, and recovery by rerunning the command
//   --help
// plus the application's own flags (app_flag). A flag's value follows it
// (`--rate 1000`) or is joined with '=' (`--rate=1000`). A bad flag or value
// throws troupe_apps::usage_error naming it; usage() lists every flag with its
// default, generated from the same tables the parser uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "troupe/util/exception.hpp"

namespace troupe_apps {

/// A bad flag or value; also a troupe::exception with errc::invalid_argument.
class usage_error : public std::runtime_error, public troupe::exception {
 public:
  explicit usage_error(const std::string& what)
      : std::runtime_error{what}, troupe::exception{troupe::errc::invalid_argument} {}
  explicit usage_error(const char* what)
      : std::runtime_error{what}, troupe::exception{troupe::errc::invalid_argument} {}
};

/// The longest input line read_lines accepts unless told otherwise: a line
/// is held whole in memory, so an input that is not line-structured (or one
/// huge line) ends with an error instead of taking all the memory.
inline constexpr std::size_t default_max_line = std::size_t{1} << 20;

/// One flag of an application beyond the common ones: its name (without
/// "--"), its default value (what the run sees when the flag is not given),
/// the placeholder of the value in the usage text, and one line of help.
struct app_flag {
  std::string name;
  std::string value;
  std::string metavar = "VALUE";
  std::string help;
  app_flag(std::string flag_name, std::string default_value, std::string placeholder = "VALUE", std::string text = "")
      : name{std::move(flag_name)},
        value{std::move(default_value)},
        metavar{std::move(placeholder)},
        help{std::move(text)} {}
};

struct cli {
  double duration = 0;  // seconds; 0 = until the passes are done (from the flags: never 0 with no --passes)
  double rate = 0;      // per source replica; 0 = full speed
  std::vector<std::size_t> parallelism;
  std::string input;
  std::size_t max_line = default_max_line;
  std::size_t batch = 512;
  std::string json;
  std::uint64_t passes = 0;  // 0 = replay until the duration is over
  std::string output;
  int metrics_port = -1;                        // --metrics-port: serve live metrics there (0: any free port); -1: off
  std::string checkpoint_dir;                   // --checkpoint-dir: take checkpoints there ("": none)
  std::uint64_t checkpoint_interval_ms = 1000;  // --checkpoint-interval
  std::string state_backend = "heap";           // --state-backend: heap or rocksdb
  bool help = false;
  bool progress = false;  // a progress line on stderr once a second (main_of: when stderr is a terminal)
  std::map<std::string, std::string> extra;  // the application's own flags (without "--")
  /// Called right before the graph starts and right after it has ended (the
  /// timed run): a profiler or a benchmark marks its measured region there.
  std::function<void()> on_run_start, on_run_end;
  /// Called by each sink replica at its first element (from its worker
  /// thread): a benchmark times a restarted job's first output there.
  std::function<void()> on_first_output;

  /// `operators`: the names of the graph's operators, in order (for
  /// --parallelism and the usage text); `default_input`: used without --input.
  /// `extra`: the application's own flags with their defaults.
  static cli parse(int argc, char** argv, const std::vector<std::string>& operators, std::string default_input,
                   const std::vector<app_flag>& extra = {});
  /// Replicas of operator i (1 when --parallelism was not given).
  std::size_t replicas(std::size_t i) const { return parallelism.empty() ? 1 : parallelism.at(i); }
  /// Every flag, common and the application's, with its default and one line.
  static std::string usage(const std::string& program, const std::vector<std::string>& operators,
                           const std::string& default_input = "", const std::vector<app_flag>& extra = {});
};

/// A flag's value as a finite, non-negative number; throws usage_error
/// naming the flag (given with its "--") and the text.
double parse_real(const std::string& flag, const std::string& text);

/// A flag's value as a whole number from `lo` to `hi`; throws usage_error
/// naming the flag (given with its "--"), the range and the text.
std::uint64_t parse_whole(const std::string& flag, const std::string& text, std::uint64_t lo, std::uint64_t hi);

/// The lines of a text file (without line ends). Throws std::runtime_error
/// naming the file (as "<what> '<path>'") when it cannot be read (with the
/// system's reason), is a directory, is empty, is not text (holds a NUL
/// byte) or has a line longer than `max_line` bytes (then with its number;
/// memory stays bounded by the longest accepted line).
std::vector<std::string> read_lines(const std::string& path, std::size_t max_line = default_max_line,
                                    const std::string& what = "input file");

}  // namespace troupe_apps
