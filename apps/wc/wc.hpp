// wc.hpp: Word Count. Source(lines) -> Splitter (split on single spaces, one
// word per non-empty token) -> Counter (farm by word: a running count per
// word, one (word, count) per input word) -> Sink.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "common/app.hpp"

namespace troupe_apps::wc {

inline const std::vector<std::string> operators{"source", "splitter", "counter", "sink"};

// fields(): how each crosses the network in a split run (troupe/net/codec.hpp).
struct line {
  std::string text;
  std::uint64_t stamp = 0;
  auto fields() { return std::tie(text, stamp); }
};
struct word {
  std::string text;
  std::uint64_t stamp = 0;
  auto fields() { return std::tie(text, stamp); }
};
struct count {
  std::string word;
  std::uint64_t n = 0;
  std::uint64_t stamp = 0;
  auto fields() { return std::tie(word, n, stamp); }
};

/// What a run leaves besides its figures: every word's final count.
struct outcome {
  run_result result;
  std::map<std::string, std::uint64_t> final_counts;
};

/// Runs WC on `sys` with the flags in `c`; the lines are read from c.input.
outcome run(troupe::actor_system& sys, const cli& c);

}  // namespace troupe_apps::wc
