#include "sd.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <random>
#include <unordered_map>

namespace troupe_apps::sd {

bool parse(const std::string& line, reading& out) {
  std::string_view f[9];
  std::size_t n = 0, i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size()) break;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (n == 9) return false;
    f[n++] = std::string_view{line}.substr(i, j - i);
    i = j;
  }
  if (n != 8) return false;
  auto whole = [](std::string_view s, auto& v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc{} && p == s.data() + s.size();
  };
  if (!whole(f[2], out.epoch) || !whole(f[3], out.device) || !whole(f[4], out.value)) return false;
  return std::isfinite(out.value);
}

std::vector<std::string> generate(std::size_t lines, int devices, std::uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::normal_distribution<double> noise{0.0, 0.15};
  std::uniform_real_distribution<double> unit{0.0, 1.0};
  std::vector<double> mean(static_cast<std::size_t>(devices));
  for (auto& m : mean) m = 18.0 + 8.0 * unit(rng);
  std::vector<std::string> out;
  out.reserve(lines);
  char buf[160];
  for (std::size_t i = 0; i < lines; ++i) {
    const int d = static_cast<int>(rng() % static_cast<std::uint64_t>(devices));
    double t = mean[static_cast<std::size_t>(d)] + noise(rng);
    if (unit(rng) < 0.002) t += (unit(rng) < 0.5 ? -1 : 1) * (2.0 + 4.0 * unit(rng));  // a spike
    const unsigned secs = static_cast<unsigned>(i / 10);
    std::snprintf(buf, sizeof buf, "2004-03-01 %02u:%02u:%02u.%06u %zu %d %.4f %.4f %.2f %.5f", (secs / 3600) % 24,
                  (secs / 60) % 60, secs % 60, static_cast<unsigned>(i % 10) * 100000u, i, d + 1, t,
                  35.0 + 5.0 * unit(rng), 100.0 * unit(rng), 2.6 + 0.1 * unit(rng));
    out.emplace_back(buf);
  }
  return out;
}

double moving_mean::add(int device, double value) {
  auto& s = devices_[device];
  if (s.last.size() < window_) {
    s.last.push_back(value);
    s.sum += value;
  } else {
    s.sum += value - s.last[s.next];
    s.last[s.next] = value;
    s.next = s.next + 1 == window_ ? 0 : s.next + 1;
  }
  return s.sum / static_cast<double>(s.last.size());
}

void moving_mean::series::save(troupe::stream::state_writer& out) const {
  out.write(last);
  out.write(static_cast<std::uint64_t>(next));
  out.write(sum);
}
void moving_mean::series::load(troupe::stream::state_reader& in) {
  in.read(last);
  next = static_cast<std::size_t>(in.read<std::uint64_t>());
  in.read(sum);
  if (next > last.size()) in.fail("a ring position beyond its values");
}
void moving_mean::save(troupe::stream::state_writer& out) const {
  out.write(static_cast<std::uint64_t>(window_));
  out.write(devices_);
}
void moving_mean::load(troupe::stream::state_reader& in) {
  if (in.read<std::uint64_t>() != window_) in.fail("it was taken with another --window");
  in.read(devices_);
}

namespace {

namespace st = troupe::stream;

struct moving_average : st::node<reading, reading> {
  static constexpr const char* kind = "moving_average";
  moving_mean mean;
  void consume(reading& r) {
    r.average = mean.add(r.device, r.value);
    send_next(std::move(r));
  }
  void snapshot(st::state_writer& out) const { out.write(mean); }
  void restore(st::state_reader& in) { in.read(mean); }
};

struct detector : st::node<reading, reading> {
  static constexpr const char* kind = "detector";
  double threshold = 0.025;
  void consume(reading& r) {
    if (std::abs(r.value - r.average) > threshold * r.average) send_next(std::move(r));
  }
};

struct spikes {
  std::mutex mtx;
  std::set<std::pair<int, std::uint64_t>> found;
};

struct sink : app_sink<reading> {
  std::shared_ptr<spikes> all;
  void consume(const reading& r) {
    arrived();
    {
      std::lock_guard<std::mutex> guard{all->mtx};
      all->found.emplace(r.device, r.epoch);
    }
    if (writes())
      line(std::to_string(r.device) + ' ' + std::to_string(r.epoch) + ' ' + std::to_string(r.value) + ' ' +
           std::to_string(r.average));
  }
};

double positive(const std::string& flag, const std::string& text) {
  const double v = parse_real("--" + flag, text);
  if (v == 0) throw usage_error("--" + flag + ": expected a positive number, got '" + text + "'");
  return v;
}

}  // namespace

outcome run(troupe::actor_system& sys, const cli& c) {
  moving_average avg;
  const double w = positive("window", c.extra.at("window"));
  if (w != std::floor(w) || w > 1e12)
    throw usage_error("--window: expected a whole number from 1 to 1000000000000, got '" + c.extra.at("window") + "'");
  avg.mean = moving_mean{static_cast<std::size_t>(w)};
  detector det;
  det.threshold = positive("threshold", c.extra.at("threshold"));
  if (is_log(c.input))
    throw usage_error("--input " + c.input + ": troupe-sd reads a file (troupe-wc and troupe-fd read NATS or Kafka)");
  auto lines = c.input.empty() ? generate(1'000'000) : read_lines(c.input, c.max_line);
  std::uint64_t malformed = 0;
  auto data = load<reading>(lines, [](const std::string& l, reading& r) { return parse(l, r); }, malformed);
  output_file out{output_file_path(c)};
  auto all = std::make_shared<spikes>();
  sink snk;
  snk.bind(out, c);
  snk.all = all;
  outcome r{run_graph(sys, "sd",
                      troupe::pipeline{
                          troupe::farm{replay_source<reading>{data, c}, c.replicas(0)},
                          troupe::farm{avg, c.replicas(1), troupe::by_key{[](const reading& r) { return r.device; }}},
                          troupe::farm{det, c.replicas(2)}, troupe::farm{snk, c.replicas(3)}},
                      c, operators.size(), malformed),
            {}};
  r.spikes = std::move(all->found);
  return r;
}

}  // namespace troupe_apps::sd
