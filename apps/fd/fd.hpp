// fd.hpp: Fraud Detection. Source(transactions "customer,transaction_id,state")
// -> Predictor (farm by customer: the customer's last 5 states; with 5 of
// them, score = mean over the 4 transitions of 1 - P[prev][cur] of an
// 18-state Markov model; forward when score > 0.96) -> Sink.
#pragma once

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/app.hpp"

namespace troupe_apps::fd {

inline const std::vector<std::string> operators{"source", "predictor", "sink"};
constexpr std::size_t states = 18;
constexpr std::size_t window = 5;
constexpr double threshold = 0.96;

struct model {
  std::vector<std::string> labels;                     // 18 state labels
  std::array<std::array<double, states>, states> p{};  // p[from][to]
  /// The state index of `label`, or -1.
  int index(const std::string& label) const;
  /// Line 1: the labels, comma-separated; then 18 rows of 18 probabilities.
  /// Throws std::runtime_error naming the file and the line when malformed.
  static model load(const std::string& path);
};

struct transaction {
  char customer[4] = {};  // 3 characters and a terminator
  char id[13] = {};       // 12 characters and a terminator
  std::uint8_t state = 0;
  double score = 0;  // set by the predictor
  std::uint64_t stamp = 0;
  auto fields() { return std::tie(customer, id, state, score, stamp); }  // how it crosses processes
};

/// "customer,transaction_id,state": false when malformed.
bool parse(const std::string& line, const model& m, transaction& out);

/// Deterministic input: `lines` transactions of `customers` customers.
std::vector<std::string> generate(std::size_t lines, std::size_t customers, const model& m, std::uint64_t seed = 42);

/// What a run leaves besides its figures: the forwarded transactions' ids.
struct outcome {
  run_result result;
  std::set<std::string> outliers;  // run with keep = true only
};

/// Runs FD; input from c.input (or, if it is empty, 800'000 generated
/// lines), model from c.extra["model"]. keep: collect the outliers' ids (a
/// set that grows with the run; the tests use it, the benchmarks do not).
outcome run(troupe::actor_system& sys, const cli& c, bool keep = false);

}  // namespace troupe_apps::fd
