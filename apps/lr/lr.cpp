#include "lr.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <random>

namespace troupe_apps::lr {

namespace {

/// The 15 comma-separated integers of a line; false if it has another shape.
bool fields(const std::string& text, std::int32_t (&f)[15]) {
  const char* p = text.data();
  const char* end = p + text.size();
  for (int i = 0; i < 15; ++i) {
    auto [q, ec] = std::from_chars(p, end, f[i]);
    if (ec != std::errc{}) return false;
    if (i < 14) {
      if (q == end || *q != ',') return false;
      p = q + 1;
    } else if (q != end) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool check(const std::string& text, std::int32_t& time, std::int32_t& vid) {
  std::int32_t f[15];
  if (!fields(text, f)) return false;
  const int type = f[0];
  time = f[1];
  vid = f[2];
  if (time < 0 || vid < 0) return false;
  if (type == 2 || type == 3 || type == 4) return true;  // queries: valid, skipped by the dispatcher
  if (type != 0) return false;
  const int speed = f[3], xway = f[4], lane = f[5], dir = f[6], seg = f[7], pos = f[8];
  return speed >= 0 && speed <= 100 && xway >= 0 && xway < max_xways && lane >= 0 && lane <= exit_lane &&
         (dir == 0 || dir == 1) && seg >= 0 && seg < segments && pos >= 0 && pos < segments * feet_per_segment &&
         pos / feet_per_segment == seg;
}

loaded load(const std::vector<std::string>& lines) {
  loaded in;
  in.data->reserve(lines.size());
  std::int32_t last_time = 0;
  for (auto& text : lines) {
    line l;
    std::int32_t time = 0;
    if (!check(text, time, l.vid)) {
      ++in.malformed;
      continue;
    }
    l.text = &text;
    l.minute = time / 60 + 1;
    last_time = std::max(last_time, time);
    in.data->push_back(l);
  }
  in.span = (last_time / 60 + 1) * 60;
  return in;
}

bool parse_report(const std::string& text, std::int32_t offset, report& out) {
  if (text.empty() || text[0] != '0' || (text.size() > 1 && text[1] != ',')) return false;
  // The first 9 fields (the line was checked when it was loaded).
  std::int32_t f[9];
  const char* p = text.data();
  const char* end = p + text.size();
  for (auto& v : f) {
    auto [q, ec] = std::from_chars(p, end, v);
    if (ec != std::errc{}) return false;
    p = q + 1;
  }
  out.time = f[1] + offset;
  out.vid = f[2];
  out.speed = f[3];
  out.xway = f[4];
  out.lane = f[5];
  out.dir = f[6];
  out.seg = f[7];
  out.pos = f[8];
  out.minute = out.time / 60 + 1;
  return true;
}

// -- generator -----------------------------------------------------------------------
//
// Each expressway direction has congestion zones (a few consecutive segments
// where, for 15-40 minutes, cars crawl at 5-20 mph) and now and then an
// accident (two cars stopped at one place for 2-4 minutes, cars behind them
// slowed down). Vehicles arrive at a rate that ramps up over the first 10
// minutes, enter at a random segment, drive 10-60 segments at their own cruising
// speed (45-75 mph, with noise) and leave on the exit lane.

namespace {

struct zone {
  int first, last;  // segments
  int from, until;  // seconds
};

struct vehicle {
  std::int32_t vid;
  int xway, dir, lane;
  double pos;  // feet
  int exit_seg;
  int cruise;        // mph
  int stop_reports;  // > 0: stopped (an accident), reports left
  bool entering;
};

struct road {
  std::vector<zone> zones;
};

int segment_at(double pos) { return static_cast<int>(pos) / feet_per_segment; }

}  // namespace

std::vector<std::string> generate(int minutes, int xways, std::uint64_t seed) {
  std::mt19937_64 rng{seed};
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>{lo, hi}(rng); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>{0, 1}(rng) < p; };
  const int seconds = minutes * 60;
  const double max_pos = segments * feet_per_segment - 1;

  // Congestion zones: about one per 20 minutes per direction, from the start.
  std::vector<road> roads(static_cast<std::size_t>(xways * 2));
  for (auto& r : roads) {
    for (int t = uniform(0, 300); t < seconds; t += uniform(600, 1500)) {
      const int first = uniform(5, segments - 10);
      r.zones.push_back(zone{first, first + uniform(2, 5), t, t + uniform(900, 2400)});
    }
  }
  auto congested = [&](int xway, int dir, int seg, int t) {
    for (auto& z : roads[static_cast<std::size_t>(xway) * 2 + static_cast<std::size_t>(dir)].zones)
      if (seg >= z.first && seg <= z.last && t >= z.from && t < z.until) return true;
    return false;
  };

  std::vector<std::vector<vehicle>> phase(30);  // vehicles by the second (mod 30) they report at
  std::vector<std::string> out;
  std::int32_t next_vid = 100;
  double arrivals = 0;
  char buf[128];
  auto emit = [&](int type, int t, const vehicle& v, int speed, int seg) {
    if (type == 0)
      std::snprintf(buf, sizeof buf, "0,%d,%d,%d,%d,%d,%d,%d,%d,-1,-1,-1,-1,-1,-1", t, v.vid, speed, v.xway, v.lane,
                    v.dir, seg, static_cast<int>(v.pos));
    else if (type == 2)
      std::snprintf(buf, sizeof buf, "2,%d,%d,-1,-1,-1,-1,-1,-1,%d,-1,-1,-1,-1,-1", t, v.vid, uniform(1, 1 << 20));
    else
      std::snprintf(buf, sizeof buf, "3,%d,%d,-1,%d,-1,-1,-1,-1,%d,-1,-1,%d,%d,-1", t, v.vid, v.xway,
                    uniform(1, 1 << 20), uniform(1, 69), uniform(1, 1440));
    out.emplace_back(buf);
  };

  for (int t = 0; t < seconds; ++t) {
    // Arrivals: per expressway, from 1 to 2 vehicles a second over the first 10 minutes.
    arrivals += xways * (1.0 + 1.0 * std::min(1.0, t / 600.0));
    const int whole = static_cast<int>(arrivals);
    arrivals -= whole;
    for (int a = 0; a < whole; ++a) {
      vehicle v{};
      v.vid = next_vid++;
      v.xway = uniform(0, xways - 1);
      v.dir = uniform(0, 1);
      const int entry = uniform(0, segments - 11);
      const int length = uniform(10, 60);
      int exit_seg = std::min(segments - 1, entry + length);
      if (v.dir == 1) {  // westbound: positions decrease
        v.pos = (segments - 1 - entry) * feet_per_segment + uniform(0, feet_per_segment - 1);
        exit_seg = segments - 1 - exit_seg;
      } else {
        v.pos = entry * feet_per_segment + uniform(0, feet_per_segment - 1);
      }
      v.exit_seg = exit_seg;
      v.cruise = uniform(45, 75);
      v.lane = 0;
      v.entering = true;
      phase[static_cast<std::size_t>(t % 30)].push_back(v);
    }
    // An accident now and then: two cars entering at one place, stopped.
    // Most of them where traffic is congested already.
    if (t % 60 == 0 && chance(0.15 * xways)) {
      vehicle a{};
      a.xway = uniform(0, xways - 1);
      a.dir = uniform(0, 1);
      int seg = uniform(10, segments - 10);
      for (auto& z : roads[static_cast<std::size_t>(a.xway) * 2 + static_cast<std::size_t>(a.dir)].zones)
        if (t >= z.from && t < z.until && chance(0.7))
          seg = a.dir == 0 ? z.last : z.first;  // so that the zone lies behind it
      a.pos = seg * feet_per_segment + uniform(0, feet_per_segment - 1);
      a.exit_seg = a.dir == 0 ? std::min(segments - 1, segment_at(a.pos) + 5) : std::max(0, segment_at(a.pos) - 5);
      a.cruise = 50;
      a.lane = uniform(1, 3);
      a.stop_reports = uniform(5, 8);
      for (int k = 0; k < 2; ++k) {
        a.vid = next_vid++;
        phase[static_cast<std::size_t>((t + k) % 30)].push_back(a);
      }
    }

    auto& due = phase[static_cast<std::size_t>(t % 30)];
    for (std::size_t i = 0; i < due.size();) {
      auto& v = due[i];
      const int seg = segment_at(v.pos);
      int speed;
      if (v.stop_reports > 0) {
        speed = 0;
        --v.stop_reports;
      } else if (congested(v.xway, v.dir, seg, t)) {
        speed = uniform(5, 20);
      } else {
        speed = std::clamp(v.cruise + uniform(-8, 8), 20, 100);
      }
      const bool leaving = !v.entering && seg == v.exit_seg;
      if (leaving) v.lane = exit_lane;
      emit(0, t, v, speed, seg);
      if (chance(0.005)) emit(chance(0.5) ? 2 : 3, t, v, 0, seg);
      if (leaving) {
        due[i] = due.back();
        due.pop_back();
        continue;
      }
      if (v.entering) {
        v.entering = false;
        v.lane = uniform(1, 3);
      }
      // 30 s at `speed` mph = 44 * speed feet.
      v.pos += (v.dir == 0 ? 44.0 : -44.0) * speed;
      const int next = segment_at(std::clamp(v.pos, 0.0, max_pos));
      v.pos = std::clamp(v.pos, 0.0, max_pos);
      // Passed the exit segment (fast cars): take the exit in it next time.
      if ((v.dir == 0 && next > v.exit_seg) || (v.dir == 1 && next < v.exit_seg))
        v.pos = v.exit_seg * feet_per_segment + (v.dir == 0 ? feet_per_segment - 1 : 0);
      ++i;
    }
  }
  return out;
}

namespace {
int whole_number(const cli& c, const std::string& flag, int lo, int hi) {
  const double v = parse_real("--" + flag, c.extra.at(flag));
  if (v != std::floor(v) || v < lo || v > hi)
    throw usage_error("--" + flag + ": expected a whole number from " + std::to_string(lo) + " to " +
                      std::to_string(hi) + ", got '" + c.extra.at(flag) + "'");
  return static_cast<int>(v);
}
}  // namespace

std::vector<std::string> generate(const cli& c) {
  return generate(whole_number(c, "minutes", 1, 24 * 60), whole_number(c, "xways", 1, max_xways));
}

// -- the troupe graph ----------------------------------------------------------------

namespace {

namespace st = troupe::stream;

/// An operator as a node (lr::minute_operator): outputs to the next stage,
/// markers to every replica of it.
template <class In, class Out, class Logic>
struct minute_node : st::node<In, Out> {
  static constexpr const char* kind = Logic::kind;
  minute_operator<In, Out, Logic> op;

  explicit minute_node(std::size_t upstream) : op{upstream} {}
  void consume(In& x) {
    op.consume(
        x, [this](Out&& o) { this->send_next(std::move(o)); }, [this](Out&& m) { this->send_all(std::move(m)); });
  }
  void on_stop() {
    op.logic.finish([this](Out&& o) { this->send_next(std::move(o)); });
  }
  void snapshot(st::state_writer& out) const { out.write(op); }
  void restore(st::state_reader& in) { in.read(op); }
};

/// What the sink replica collects for run()'s outcome.
struct collected {
  bool keep = false;
  outcome* into = nullptr;
};

/// With --checkpoint-dir, its lines go to --output exactly once (app_sink);
/// its join's state is saved with the file sink's.
struct sink : app_sink<notification> {
  toll_logic logic;
  minute_markers markers;
  collected c;

  sink(std::size_t upstream, collected into) : markers{upstream}, c{into} {}
  void snapshot(st::state_writer& w) {
    app_sink::snapshot(w);
    w.write(logic);
    w.write(markers);
  }
  void restore(st::state_reader& r) {
    app_sink::restore(r);
    r.read(logic);
    r.read(markers);
  }
  void consume(notification& n) {
    arrived();
    if (n.closes != no_marker) {
      if (markers.complete(n.closes)) logic.close(n.closes, n.stamp, [this](toll&& t) { record(t); });
      return;
    }
    if (c.keep) {
      if (n.kind == notification::lav) c.into->lavs[{n.segment, n.minute}] = n.value;
      if (n.kind == notification::count) {
        c.into->cars[{n.segment, n.minute}] = n.value;
        if (n.accident) c.into->accidents.emplace(n.segment, n.minute);
      }
    }
    logic.on(n, [](toll&&) {});
  }
  void on_stop() {
    logic.finish([this](toll&& t) { record(t); });
    app_sink::on_stop();
  }
  void record(const toll& t) {
    ++c.into->assessed;
    if (t.amount > 0) ++c.into->charged;
    if (c.keep) c.into->tolls.push_back(t);
    if (writes()) {
      char buf[96];
      const int s = segment_of(t.segment), rest = t.segment / segments;
      std::snprintf(buf, sizeof buf, "%d,%d,%d,%d,%d,%d,%d,%d", t.vid, t.minute, rest / 2, rest % 2, s, t.lav, t.cars,
                    t.amount);
      line(buf);
    }
  }
};

/// lr::minute_clock with its markers sent to every dispatcher.
struct clock_to_all {
  minute_clock clock;
  void save(st::state_writer& out) const { clock.save(out); }
  void load(st::state_reader& in) { clock.load(in); }
  void operator()(line& l, std::uint64_t pass, st::emitter<line>& out) {
    clock(l, pass, [&out](line&& m) { out.send_all(std::move(m)); });
  }
};

}  // namespace

outcome run(troupe::actor_system& sys, const cli& c, bool keep) {
  if (c.replicas(8) != 1)
    throw usage_error("--parallelism: the sink joins the three branches and has one replica, got " +
                      std::to_string(c.replicas(8)));
  if (is_log(c.input))
    throw usage_error("--input " + c.input + ": troupe-lr reads a file (troupe-wc and troupe-fd read NATS or Kafka)");
  auto lines =
      std::make_shared<std::vector<std::string>>(c.input.empty() ? generate(c) : read_lines(c.input, c.max_line));
  auto in = load(*lines);
  if (in.data->empty())
    throw std::runtime_error("no valid position report in the input (" + std::to_string(in.malformed) +
                             " malformed lines)");

  outcome r;
  output_file out{output_file_path(c)};
  using troupe::branches;
  using troupe::by_key;
  using troupe::farm;
  using troupe::pipeline;
  const auto p = [&](std::size_t i) { return c.replicas(i); };
  sink snk{p(2) + p(5) + p(7), collected{keep, &r}};
  snk.bind(out, c);
  auto by_vehicle = [](const auto& x) { return x.vid; };
  auto by_segment = [](const auto& x) { return x.segment; };
  auto by_report_segment = [](const report& x) { return x.segment(); };
  r.result = run_graph(
      sys, "lr",
      pipeline{
          farm{replay_source<line, clock_to_all>{in.data, c, clock_to_all{minute_clock{in.span}}}, p(0)},
          farm{minute_node<line, report, dispatcher_logic>{p(0)}, p(1), by_key{[](const line& l) { return l.vid; }}},
          branches{
              farm{minute_node<report, notification, crossing_logic>{p(1)}, p(2),
                   by_key{[=](const report& x) { return by_vehicle(x); }}},
              pipeline{farm{minute_node<report, vehicle_speed, average_speed_logic>{p(1)}, p(3),
                            by_key{[=](const report& x) { return by_vehicle(x); }}},
                       farm{minute_node<vehicle_speed, lav, last_average_speed_logic>{p(3)}, p(4),
                            by_key{[=](const vehicle_speed& x) { return by_segment(x); }}},
                       farm{minute_node<lav, notification, lav_notification_logic>{p(4)}, p(5)}},
              pipeline{farm{minute_node<report, count, count_vehicles_logic>{p(1)}, p(6), by_key{by_report_segment}},
                       farm{minute_node<count, notification, count_notification_logic>{p(6)}, p(7)}}},
          snk},
      c, operators.size(), in.malformed);
  std::sort(r.tolls.begin(), r.tolls.end());
  return r;
}

}  // namespace troupe_apps::lr
