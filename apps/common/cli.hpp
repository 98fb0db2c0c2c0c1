// cli.hpp: the flags every streaming application takes, parsed and checked.
//   --duration SECONDS   run this long (default 10 unless --passes is given)
//   --rate N             tuples per second per source replica (0 = full speed)
//   --parallelism a,b,.. replicas per operator, in graph order
//   --input PATH         input file (loaded into memory, replayed cyclically)
//   --batch N            elements a node handles per activation
//   --json PATH          results file
//   --passes N           replay the input N times, then end of stream
//   --output PATH        what reaches the sink, one tuple per line
//   --help
// A bad flag or value throws troupe_apps::usage_error naming it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace troupe_apps {

class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct cli {
  double duration = 0;  // seconds; 0 = until the passes are done
  double rate = 0;      // per source replica; 0 = full speed
  std::vector<std::size_t> parallelism;
  std::string input;
  std::size_t batch = 512;
  std::string json;
  std::uint64_t passes = 0;  // 0 = replay until the duration is over
  std::string output;
  bool help = false;
  std::map<std::string, std::string> extra;  // the application's own flags (without "--")

  /// `operators`: the names of the graph's operators, in order (for
  /// --parallelism and the usage text); `default_input`: used without --input.
  /// `extra`: the application's own flags (name without "--", and a default).
  static cli parse(int argc, char** argv, const std::vector<std::string>& operators, std::string default_input,
                   const std::map<std::string, std::string>& extra = {});
  /// Replicas of operator i (1 when --parallelism was not given).
  std::size_t replicas(std::size_t i) const { return parallelism.empty() ? 1 : parallelism.at(i); }
  static std::string usage(const std::string& program, const std::vector<std::string>& operators);
};

/// A flag's value as a finite, non-negative number; throws usage_error
/// naming the flag (given with its "--") and the text.
double parse_real(const std::string& flag, const std::string& text);

/// The lines of a text file (without line ends); throws std::runtime_error
/// naming the file when it cannot be read or is empty.
std::vector<std::string> read_lines(const std::string& path);

}  // namespace troupe_apps
