// timed_windows.hpp: an event-time scenario for graphs split across ranks
// (split_engine_test.cpp in one process, net_process_test.cpp across two).
// A source emits keys 1..3 before time 10 and a watermark of 10, then waits
// (pausing, never blocking its worker) until the sink has every key's window
// [0, 10): only the watermark, crossing the ranks through the windows and
// back, closes them before the end of the stream. A wait that gives up
// after 20 s is counted.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "troupe/troupe.hpp"

namespace troupe_test {

struct timed_reading {
  int key;
  std::uint64_t time;
  long value;
  auto fields() { return std::tie(key, time, value); }
};
using timed_result = troupe::stream::window_result<int, long>;

/// What the sink saw (the source waits on it).
struct timed_log {
  std::mutex m;
  std::vector<timed_result> results;
  std::vector<std::uint64_t> marks;  // the sink's input watermarks
  std::atomic<int> gave_up{0};
  bool has_first_windows() {
    std::lock_guard<std::mutex> g{m};
    return std::count_if(results.begin(), results.end(), [](const timed_result& r) { return r.start == 0; }) == 3;
  }
  std::vector<timed_result> sorted() {
    std::lock_guard<std::mutex> g{m};
    auto out = results;
    std::sort(out.begin(), out.end(), [](const timed_result& a, const timed_result& b) {
      return std::tie(a.key, a.start, a.value) < std::tie(b.key, b.start, b.value);
    });
    return out;
  }
};

struct timed_source : troupe::stream::node<void, timed_reading> {
  static constexpr bool emits_watermarks = true;
  std::shared_ptr<timed_log> log;
  int step = 0;
  std::uint64_t deadline = 0;
  bool produce() {
    switch (step) {
      case 0:
        send_next(timed_reading{1, 1, 1});
        break;
      case 1:
        send_next(timed_reading{2, 2, 2});
        break;
      case 2:
        send_next(timed_reading{3, 3, 3});
        break;
      case 3:
        send_next(timed_reading{1, 12, 5});
        break;
      case 4:
        emit_watermark(10);
        break;
      case 5: {
        const auto now = troupe::stream::now();
        if (deadline == 0) deadline = now + 20'000'000'000ULL;
        if (!log->has_first_windows()) {
          if (now < deadline) {
            pause_until(now + 200'000);
            return true;
          }
          ++log->gave_up;
        }
        break;
      }
      case 6:
        send_next(timed_reading{2, 15, 6});
        break;
      default:
        return false;
    }
    ++step;
    return true;
  }
};

struct timed_sink : troupe::stream::node<timed_result, void> {
  std::shared_ptr<timed_log> log;
  void consume(timed_result& r) {
    std::lock_guard<std::mutex> g{log->m};
    log->results.push_back(r);
  }
  void on_watermark(std::uint64_t w) {
    std::lock_guard<std::mutex> g{log->m};
    log->marks.push_back(w);
  }
};

/// source -> event-time windows of 10 by key (a farm of 2, placed on
/// `window_ranks`) -> sink.
inline auto timed_windows(const std::shared_ptr<timed_log>& log, const troupe::placement& window_ranks) {
  timed_source src;
  src.log = log;
  timed_sink snk;
  snk.log = log;
  auto key = [](const timed_reading& r) { return r.key; };
  auto time = [](const timed_reading& r) { return r.time; };
  auto add = [](long& acc, const timed_reading& r) { acc += r.value; };
  auto w = troupe::stream::time_window_incremental<timed_reading>(key, time, 10, 10, 0L, add);
  return troupe::pipeline{src, troupe::placed{troupe::farm{w, 2, troupe::by_key{key}}, window_ranks}, snk};
}

/// What the sink must have seen, sorted.
inline std::vector<timed_result> timed_windows_want() {
  return {{1, 0, 10, 1}, {1, 10, 20, 5}, {2, 0, 10, 2}, {2, 10, 20, 6}, {3, 0, 10, 3}};
}

}  // namespace troupe_test
