// failure_detector.hpp: the phi-accrual failure detector of troupe::net's
// connections (not installed). Hayashibara et al., "The phi accrual failure
// detector" (2004), as Akka and Pekko use it: instead of a fixed timeout it
// learns how a peer's frames usually arrive (a window of inter-arrival
// times, their mean and standard deviation) and says how unlikely the
// present silence is, as phi = -log10(P(a gap at least this long)). phi 8
// means one chance in 10^8 that a peer that still runs stays this quiet.
// A pure class: times come in as arguments, nothing here reads a clock, so
// tests feed it synthetic times (tests/net_liveness_test.cpp).
//
// Every frame heard is an arrival (a peer that sends data needs no
// heartbeat). Data makes the gaps short, so the mean alone would turn a
// burst followed by the usual heartbeat gap into a "failure":
// acceptable_pause is added to the mean (the gaps the detector forgives
// beyond what it learnt, like Akka's acceptable-heartbeat-pause) and
// min_stddev keeps the distribution from becoming a step. A hard timeout
// stays as an upper bound whatever the history says.
// Cost: a few additions per arrival; phi (one erfc) once per check.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace troupe::net::detail {

class phi_detector {
 public:
  using clock = std::chrono::steady_clock;

  struct settings {
    double threshold = 8.0;                            ///< phi above this: unreachable
    std::chrono::milliseconds acceptable_pause{3000};  ///< added to the mean gap
    std::chrono::milliseconds min_stddev{200};         ///< the spread never assumed smaller
    std::chrono::milliseconds hard_timeout{10000};     ///< silence this long: unreachable, whatever phi says
    std::chrono::milliseconds first_estimate{1000};  ///< the gap expected before any was seen (the heartbeat interval)
    std::size_t window = 100;                        ///< gaps remembered
  };

  /// Starts as if a frame had just arrived at `now`, with two made-up gaps
  /// around first_estimate (a quarter either side), so that the first real
  /// silence is judged by the expected heartbeat rate.
  phi_detector(const settings& s, clock::time_point now) : s_{s}, last_{now} {
    gaps_.reserve(cap_);
    const double e = ms(s_.first_estimate);
    add(e * 0.75);
    add(e * 1.25);
  }

  /// A frame arrived at `now`.
  void heard(clock::time_point now) noexcept {
    if (now > last_) add(ms(now - last_));
    last_ = std::max(last_, now);
  }

  /// This node itself did not run for `d` (its I/O thread starved, or the
  /// process stopped): what the peer sent meanwhile waits unread, so the
  /// silence is not the peer's. Moves the last arrival forward by `d`.
  void forgive(clock::duration d) noexcept { last_ += d; }

  /// How long nothing was heard, at `now`.
  clock::duration silence(clock::time_point now) const noexcept {
    return now > last_ ? now - last_ : clock::duration{};
  }

  /// phi at `now`: 0 right after an arrival, growing with the silence
  /// (infinity once the silence is beyond what a double can tell).
  double phi(clock::time_point now) const noexcept {
    const double gap = ms(silence(now));
    const double n = static_cast<double>(gaps_.size());
    const double mean = sum_ / n;
    const double var = std::max(0.0, sum_sq_ / n - mean * mean);
    const double sd = std::max(std::sqrt(var), ms(s_.min_stddev));
    const double y = (gap - (mean + ms(s_.acceptable_pause))) / sd;
    // P(a gap > silence) under a normal distribution: erfc's tail.
    const double p_later = 0.5 * std::erfc(y / std::sqrt(2.0));
    if (p_later <= 0.0) return std::numeric_limits<double>::infinity();
    return -std::log10(p_later);
  }

  /// Whether the peer counts as unreachable at `now`.
  bool suspect(clock::time_point now) const noexcept {
    return silence(now) >= s_.hard_timeout || phi(now) > s_.threshold;
  }

  /// The mean gap learnt so far, in milliseconds (for messages and tests).
  double mean_ms() const noexcept { return sum_ / static_cast<double>(gaps_.size()); }
  const settings& config() const noexcept { return s_; }

 private:
  static double ms(clock::duration d) noexcept { return std::chrono::duration<double, std::milli>(d).count(); }

  void add(double gap) noexcept {
    if (gaps_.size() < cap_) {
      gaps_.push_back(gap);
    } else {
      const double old = gaps_[next_];
      sum_ -= old;
      sum_sq_ -= old * old;
      gaps_[next_] = gap;
      next_ = (next_ + 1) % gaps_.size();
    }
    sum_ += gap;
    sum_sq_ += gap * gap;
    if (next_ == 0 && gaps_.size() == cap_) {  // once per window: no drift from the subtractions
      sum_ = sum_sq_ = 0;
      for (double g : gaps_) sum_ += g, sum_sq_ += g * g;
    }
  }

  settings s_;
  std::size_t cap_ = std::max<std::size_t>(s_.window, 2);
  clock::time_point last_;
  std::vector<double> gaps_;  // a ring once full (next_: the oldest)
  std::size_t next_ = 0;
  double sum_ = 0, sum_sq_ = 0;
};

}  // namespace troupe::net::detail
