// sd.hpp: Spike Detection. Source(sensor readings "date time epoch device_id
// temperature humidity light voltage") -> MovingAverage (farm by device: the
// mean of the device's last `window` temperatures, this one included; slide
// 1) -> Detector (spike when |value - mean| > threshold * mean) -> Sink.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/app.hpp"

namespace troupe_apps::sd {

inline const std::vector<std::string> operators{"source", "moving_average", "detector", "sink"};

struct reading {
  std::uint64_t epoch = 0;
  int device = 0;
  double value = 0;    // temperature
  double average = 0;  // set by the moving average
  std::uint64_t stamp = 0;
  auto fields() { return std::tie(epoch, device, value, average, stamp); }  // how it crosses processes
};

/// Whitespace-separated fields; false when malformed (wrong field count,
/// non-numeric epoch, device or temperature).
bool parse(const std::string& line, reading& out);

/// Deterministic input: `lines` readings of `devices` devices, temperatures
/// around a per-device mean with rare spikes.
std::vector<std::string> generate(std::size_t lines, int devices = 52, std::uint64_t seed = 42);

/// The mean of each device's last `window` values, the new one included
/// (before the window is full: of what there is). Shared with the CAF version.
class moving_mean {
 public:
  explicit moving_mean(std::size_t window = 1000) : window_{window} {}
  double add(int device, double value);
  /// Its state, for checkpoints (--checkpoint-dir).
  void save(troupe::stream::state_writer& out) const;
  void load(troupe::stream::state_reader& in);

 private:
  struct series {
    std::vector<double> last;  // ring of the last `window` values
    std::size_t next = 0;
    double sum = 0;
    void save(troupe::stream::state_writer& out) const;
    void load(troupe::stream::state_reader& in);
  };
  std::size_t window_;
  std::unordered_map<int, series> devices_;
};

/// What a run leaves besides its figures: the spikes, as (device, epoch).
struct outcome {
  run_result result;
  std::set<std::pair<int, std::uint64_t>> spikes;
};

/// Runs SD; input from c.input (empty: 1,000,000 generated readings); flags
/// c.extra["window"] (1000) and c.extra["threshold"] (0.025).
outcome run(troupe::actor_system& sys, const cli& c);

}  // namespace troupe_apps::sd
