// lr.hpp: Linear Road, the toll part. Position reports ("Type,Time,VID,Spd,
// XWay,Lane,Dir,Seg,Pos" and six more fields) flow through
//
//   source -> dispatcher (keeps type 0, parses; farm by vehicle)
//     -> every report to each of three branches:
//        toll_notification_pos (by vehicle: a vehicle entering a segment)
//        average_speed (by vehicle: its mean speed per segment and minute)
//          -> last_average_speed (by segment: LAV, the mean of the segment's
//             average speeds over the last 5 minutes) -> toll_notification_las
//        count_vehicles (by segment: distinct cars per minute, accidents)
//          -> toll_notification_cv
//     -> sink (one replica: joins crossings with the segment statistics and
//        assesses each toll).
//
// Minutes are event time (minute = Time / 60 + 1). The source sends an
// end-of-minute marker to every replica after the last report of each minute
// (send_all); each operator counts the markers of all its upstream replicas,
// and when a minute is complete it emits that minute's statistics and passes
// the marker on. So every result is independent of the replica counts and of
// scheduling. The operator logic below is shared with the CAF version of the
// application (bench/apps), which wraps the same classes in actors.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/app.hpp"

namespace troupe_apps::lr {

inline const std::vector<std::string> operators{"source",         "dispatcher",           "toll_notification_pos",
                                                "average_speed",  "last_average_speed",   "toll_notification_las",
                                                "count_vehicles", "toll_notification_cv", "sink"};

inline constexpr int exit_lane = 4;
inline constexpr int segments = 100;  // per expressway and direction
inline constexpr int max_xways = 100;
inline constexpr int feet_per_segment = 5280;

/// A segment of one expressway in one direction, as one number.
inline std::int32_t segment_key(int xway, int dir, int seg) { return (xway * 2 + dir) * segments + seg; }
inline int segment_of(std::int32_t key) { return key % segments; }
inline int direction_of(std::int32_t key) { return (key / segments) % 2; }

/// A marker is any of the tuples below with `closes` >= 0: every tuple of
/// minute `closes` and before has been sent by the replica it comes from.
inline constexpr std::int32_t no_marker = -1;

/// Source -> dispatcher: one input line (kept in memory by the source).
struct line {
  const std::string* text = nullptr;
  std::int32_t offset = 0;  // seconds added to Time (the replay's pass)
  std::int32_t vid = 0;     // parsed at load time, for the routing by vehicle
  std::int32_t minute = 0;  // of the shifted Time
  std::int32_t closes = no_marker;
  std::uint64_t stamp = 0;
};
// A line points into the loaded input, so it cannot cross processes: its
// codec (end of this file) refuses it. The other elements list their fields.

/// A type-0 position report (dispatcher -> the three branches).
struct report {
  std::int32_t time = 0, vid = 0, speed = 0, xway = 0, lane = 0, dir = 0, seg = 0, pos = 0;
  std::int32_t minute = 0;
  std::int32_t closes = no_marker;
  std::uint64_t stamp = 0;
  std::int32_t segment() const { return segment_key(xway, dir, seg); }
  auto fields() { return std::tie(time, vid, speed, xway, lane, dir, seg, pos, minute, closes, stamp); }
};

/// average_speed -> last_average_speed: a vehicle's mean speed in one
/// segment during one minute, in thousandths of a mile per hour.
struct vehicle_speed {
  std::int32_t vid = 0, segment = 0, minute = 0;
  std::int64_t milli_mph = 0;
  std::int32_t closes = no_marker;
  std::uint64_t stamp = 0;
  auto fields() { return std::tie(vid, segment, minute, milli_mph, closes, stamp); }
};

/// last_average_speed -> toll_notification_las: the LAV of a segment that
/// applies to `minute` (from the 5 minutes before it), in whole mph.
struct lav {
  std::int32_t segment = 0, minute = 0, mph = 0;
  std::int32_t closes = no_marker;
  std::uint64_t stamp = 0;
  auto fields() { return std::tie(segment, minute, mph, closes, stamp); }
};

/// count_vehicles -> toll_notification_cv: the distinct cars of a segment
/// during `minute`, and whether it had an accident then.
struct count {
  std::int32_t segment = 0, minute = 0, cars = 0;
  bool accident = false;
  std::int32_t closes = no_marker;
  std::uint64_t stamp = 0;
  auto fields() { return std::tie(segment, minute, cars, accident, closes, stamp); }
};

/// The three branches -> sink.
struct notification {
  enum kind_t : std::int8_t { crossing, lav, count } kind = crossing;
  bool accident = false;  // count
  std::int32_t vid = 0;   // crossing
  std::int32_t segment = 0, minute = 0;
  std::int32_t value = 0;  // lav: mph; count: cars
  std::int32_t closes = no_marker;
  // Its state in a checkpoint (the sink keeps crossings until their minute closes).
  void save(troupe::stream::state_writer& out) const {
    out.write(std::tie(kind, accident, vid, segment, minute, value, closes, stamp));
  }
  void load(troupe::stream::state_reader& in) {
    auto all = std::tie(kind, accident, vid, segment, minute, value, closes, stamp);
    in.read(all);
  }
  std::uint64_t stamp = 0;
  auto fields() { return std::tie(kind, accident, vid, segment, minute, value, closes, stamp); }
};

/// The sink's output: the toll of a vehicle entering a segment.
struct toll {
  std::int32_t vid = 0, segment = 0, minute = 0;
  std::int32_t lav = -1;  // -1: no LAV known for the segment
  std::int32_t cars = 0;  // in the minute before
  std::int32_t amount = 0;
  auto operator<=>(const toll&) const = default;
};

template <class T>
T marker(std::int32_t minute, std::uint64_t stamp) {
  T m{};
  m.closes = minute;
  m.stamp = stamp;
  return m;
}

/// Checks a line: 15 comma-separated integers, a known type (0, 2, 3, 4)
/// and, for a position report, fields in their ranges. Sets time and vid.
bool check(const std::string& text, std::int32_t& time, std::int32_t& vid);

/// Parses a checked line of type 0 (the first 9 fields); false for the
/// other types (queries, which the toll workload skips).
bool parse_report(const std::string& text, std::int32_t offset, report& out);

/// Deterministic input: `minutes` of simulated traffic on `xways`
/// expressways (vehicles entering, driving 10-60 segments at varying speeds,
/// congestion that builds up and clears, a few accidents; each vehicle reports
/// every 30 s; about 1 line in 200 is a query of type 2 or 3). Sorted by time.
std::vector<std::string> generate(int minutes, int xways = 1, std::uint64_t seed = 7);
/// The same, sized by the flags --minutes (1 to 1440) and --xways (1 to 100);
/// throws usage_error naming a bad one.
std::vector<std::string> generate(const cli& c);

/// The checked lines of an input as source tuples (pointing into `lines`,
/// which must outlive them), the seconds one pass spans (whole minutes) and
/// the lines that failed lr::check.
struct loaded {
  std::shared_ptr<std::vector<line>> data = std::make_shared<std::vector<line>>();
  std::int32_t span = 60;
  std::uint64_t malformed = 0;
};
loaded load(const std::vector<std::string>& lines);

/// The source's step before each tuple: shifts Time by whole passes (so that
/// a replay goes on in time) and, when a minute has ended, sends its marker
/// through all(marker) (to every replica of the next stage).
struct minute_clock {
  std::int32_t span = 0;  // seconds per pass
  std::int32_t current = -1;
  void save(troupe::stream::state_writer& out) const { out.write(current); }
  void load(troupe::stream::state_reader& in) { in.read(current); }
  template <class All>
  void operator()(line& l, std::uint64_t pass, All&& all) {
    l.offset = static_cast<std::int32_t>(pass) * span;
    l.minute = l.minute + l.offset / 60;
    if (current == -1) current = l.minute;
    for (; current < l.minute; ++current) all(marker<line>(current, troupe::stream::now()));
  }
};

// -- end-of-minute markers -----------------------------------------------------

/// Counts one operator replica's markers: complete(m) is true when the last
/// of its `upstream` replicas has closed minute m.
class minute_markers {
 public:
  explicit minute_markers(std::size_t upstream = 1) : upstream_{upstream} {}
  bool complete(std::int32_t minute) {
    if (++seen_[minute] < upstream_) return false;
    seen_.erase(minute);
    return true;
  }
  void save(troupe::stream::state_writer& out) const { out.write(seen_); }
  void load(troupe::stream::state_reader& in) { in.read(seen_); }

 private:
  std::size_t upstream_;
  std::map<std::int32_t, std::size_t> seen_;
};

/// One operator replica around a logic class (below): a tuple goes to
/// logic.on, whose outputs go on by emit(out&&); the marker that completes a
/// minute (the last of the upstream replicas') closes it there, then goes on
/// by all(marker) to every replica of the next operator. The troupe node
/// (lr.cpp) and the CAF actor (bench/apps/caf.cpp) both wrap it.
template <class In, class Out, class Logic>
struct minute_operator {
  Logic logic;
  minute_markers markers;

  explicit minute_operator(std::size_t upstream = 1) : markers{upstream} {}
  // Its state in a checkpoint: the logic's (if it keeps any) and the markers'.
  void save(troupe::stream::state_writer& out) const {
    if constexpr (requires { logic.save(out); }) logic.save(out);
    markers.save(out);
  }
  void load(troupe::stream::state_reader& in) {
    if constexpr (requires { logic.load(in); }) logic.load(in);
    markers.load(in);
  }
  template <class Emit, class All>
  void consume(In& x, Emit&& emit, All&& all) {
    if (x.closes == no_marker) return logic.on(x, emit);
    if (!markers.complete(x.closes)) return;
    logic.close(x.closes, x.stamp, emit);
    all(marker<Out>(x.closes, x.stamp));
  }
};

// -- operator logic (shared by the troupe nodes and the CAF actors) ------------
// Each has on(input, emit), close(minute, stamp, emit) when every upstream
// replica has closed `minute`, and finish(emit) at the end of the stream.

/// Operators that keep no per-minute state: nothing to do at a minute's
/// close or at the end.
struct per_tuple {
  template <class Emit>
  void close(std::int32_t, std::uint64_t, Emit&&) {}
  template <class Emit>
  void finish(Emit&&) {}
};

struct dispatcher_logic : per_tuple {
  static constexpr const char* kind = "dispatcher";
  template <class Emit>
  void on(const line& l, Emit&& emit) {
    report r;
    if (!parse_report(*l.text, l.offset, r)) return;
    r.stamp = l.stamp;
    emit(std::move(r));
  }
};

/// A toll notification is due when a vehicle reports from a segment other
/// than its previous report's (its first report included), unless it is on
/// the exit lane.
struct crossing_logic : per_tuple {
  static constexpr const char* kind = "toll_notification_pos";
  std::unordered_map<std::int32_t, std::int32_t> last_segment;  // vehicle -> segment
  void save(troupe::stream::state_writer& out) const { out.write(last_segment); }
  void load(troupe::stream::state_reader& in) { in.read(last_segment); }
  template <class Emit>
  void on(const report& r, Emit&& emit) {
    const auto s = r.segment();
    auto [it, fresh] = last_segment.try_emplace(r.vid, s);
    if (!fresh) {
      if (it->second == s) return;
      it->second = s;
    }
    if (r.lane == exit_lane) return;
    notification n;
    n.kind = notification::crossing;
    n.vid = r.vid;
    n.segment = s;
    n.minute = r.minute;
    n.stamp = r.stamp;
    emit(std::move(n));
  }
};

/// Minutes of per-key state, closed in order.
template <class State>
class by_minute {
 public:
  State& at(std::int32_t minute) { return open_[minute]; }
  /// f(minute, state) for every open minute up to `minute`, in order.
  template <class F>
  void close_until(std::int32_t minute, F&& f) {
    while (!open_.empty() && open_.begin()->first <= minute) {
      f(open_.begin()->first, open_.begin()->second);
      open_.erase(open_.begin());
    }
  }
  std::int32_t last() const { return open_.empty() ? no_marker : open_.rbegin()->first; }
  void save(troupe::stream::state_writer& out) const { out.write(open_); }
  void load(troupe::stream::state_reader& in) { in.read(open_); }

 private:
  std::map<std::int32_t, State> open_;
};

struct sum_count {
  std::int64_t sum = 0;
  std::int64_t n = 0;
  void save(troupe::stream::state_writer& out) const { out.write(std::pair{sum, n}); }
  void load(troupe::stream::state_reader& in) {
    auto all = std::tie(sum, n);
    in.read(all);
  }
};

/// Operators that gather state per minute: `minutes`, the stamp of their
/// latest input (what they emit at the end carries it), and finish(), which
/// closes the last open minute.
template <class Derived, class State>
struct per_minute {
  by_minute<State> minutes;
  std::uint64_t stamp = 0;
  // The state of the operators below that keep nothing more.
  void save(troupe::stream::state_writer& out) const {
    minutes.save(out);
    out.write(stamp);
  }
  void load(troupe::stream::state_reader& in) {
    minutes.load(in);
    in.read(stamp);
  }
  template <class Emit>
  void finish(Emit&& emit) {
    if (minutes.last() != no_marker) static_cast<Derived&>(*this).close(minutes.last(), stamp, emit);
  }
};

/// f(i, j) for each run [i, j) of elements of `sorted` with equal key(x).
template <class T, class Key, class F>
void for_each_run(const std::vector<T>& sorted, Key key, F f) {
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i + 1;
    while (j < sorted.size() && key(sorted[j]) == key(sorted[i])) ++j;
    f(i, j);
    i = j;
  }
}

struct vehicle_segment_speed {
  std::uint64_t key;  // vehicle << 32 | segment
  std::int64_t mph;
  void save(troupe::stream::state_writer& out) const { out.write(std::pair{key, mph}); }
  void load(troupe::stream::state_reader& in) {
    auto all = std::tie(key, mph);
    in.read(all);
  }
};

/// Each vehicle's mean speed per segment and minute. Reports are appended
/// to their minute and summed per (vehicle, segment) when it closes (a sort:
/// cheaper than a hash table per minute, and exact whatever the order).
struct average_speed_logic : per_minute<average_speed_logic, std::vector<vehicle_segment_speed>> {
  static constexpr const char* kind = "average_speed";
  using speed = vehicle_segment_speed;
  template <class Emit>
  void on(const report& r, Emit&&) {
    minutes.at(r.minute).push_back(
        speed{(static_cast<std::uint64_t>(r.vid) << 32) | static_cast<std::uint32_t>(r.segment()), r.speed});
    stamp = r.stamp;
  }
  template <class Emit>
  void close(std::int32_t minute, std::uint64_t at, Emit&& emit) {
    minutes.close_until(minute, [&](std::int32_t m, std::vector<speed>& all) {
      std::sort(all.begin(), all.end(), [](const speed& a, const speed& b) { return a.key < b.key; });
      for_each_run(
          all, [](const speed& x) { return x.key; },
          [&](std::size_t i, std::size_t j) {
            std::int64_t sum = 0;
            for (std::size_t k = i; k < j; ++k) sum += all[k].mph;
            vehicle_speed v;
            v.vid = static_cast<std::int32_t>(all[i].key >> 32);
            v.segment = static_cast<std::int32_t>(all[i].key & 0xffffffffu);
            v.minute = m;
            v.milli_mph = sum * 1000 / static_cast<std::int64_t>(j - i);
            v.stamp = at;
            emit(std::move(v));
          });
    });
  }
};

/// Per segment: its average speed of each minute (the mean of its vehicles'
/// means), and at the close of minute m the LAV that applies to minute m+1:
/// the mean of those averages over minutes m-4 .. m (minutes without cars
/// left out), rounded down to whole mph.
// minutes: segment -> the sum and count of its vehicles' means
struct last_average_speed_logic : per_minute<last_average_speed_logic, std::unordered_map<std::int32_t, sum_count>> {
  static constexpr const char* kind = "last_average_speed";
  std::unordered_map<std::int32_t, std::deque<std::pair<std::int32_t, std::int64_t>>> history;  // (minute, mean)
  std::int32_t closed = no_marker;
  void save(troupe::stream::state_writer& out) const {
    per_minute::save(out);
    out.write(history);
    out.write(closed);
  }
  void load(troupe::stream::state_reader& in) {
    per_minute::load(in);
    in.read(history);
    in.read(closed);
  }
  template <class Emit>
  void on(const vehicle_speed& v, Emit&&) {
    auto& a = minutes.at(v.minute)[v.segment];
    a.sum += v.milli_mph;
    ++a.n;
    stamp = v.stamp;
  }
  template <class Emit>
  void close(std::int32_t minute, std::uint64_t at, Emit&& emit) {
    minutes.close_until(minute, [&](std::int32_t m, auto& segs) {
      for (auto& [s, a] : segs) history[s].emplace_back(m, a.sum / a.n);
    });
    // One LAV per closed minute, also for minutes without any report here.
    for (std::int32_t m = closed == no_marker ? minute : closed + 1; m <= minute; ++m) emit_lavs(m, at, emit);
    closed = std::max(closed, minute);
  }

 private:
  template <class Emit>
  void emit_lavs(std::int32_t m, std::uint64_t at, Emit& emit) {
    for (auto it = history.begin(); it != history.end();) {
      auto& h = it->second;
      while (!h.empty() && h.front().first < m - 4) h.pop_front();
      if (h.empty()) {
        it = history.erase(it);
        continue;
      }
      std::int64_t sum = 0, n = 0;
      for (auto& [hm, mean] : h)
        if (hm <= m) sum += mean, ++n;
      if (n > 0) {
        lav l;
        l.segment = it->first;
        l.minute = m + 1;
        l.mph = static_cast<std::int32_t>(sum / n / 1000);
        l.stamp = at;
        emit(std::move(l));
      }
      ++it;
    }
  }
};

/// Per segment and minute: the distinct cars, and accidents: two or more
/// cars stopped (4 consecutive reports, 30 s apart, from the same lane and
/// position) at the same place. Cars are appended to their minute and
/// counted (sorted, duplicates dropped) when it closes.
struct count_vehicles_state {
  std::vector<std::uint64_t> cars;                                              // segment << 32 | vehicle
  std::unordered_map<std::uint64_t, std::unordered_set<std::int32_t>> stopped;  // place -> stopped vehicles
  void save(troupe::stream::state_writer& out) const {
    out.write(cars);
    out.write(stopped);
  }
  void load(troupe::stream::state_reader& in) {
    in.read(cars);
    in.read(stopped);
  }
};
struct count_vehicles_logic : per_minute<count_vehicles_logic, count_vehicles_state> {
  static constexpr const char* kind = "count_vehicles";
  using minute_state = count_vehicles_state;
  struct streak {
    std::int32_t time = 0, lane = 0, pos = 0, segment = 0, reports = 0;
    void save(troupe::stream::state_writer& out) const { out.write(std::tuple{time, lane, pos, segment, reports}); }
    void load(troupe::stream::state_reader& in) {
      auto all = std::tie(time, lane, pos, segment, reports);
      in.read(all);
    }
  };
  std::unordered_map<std::int32_t, streak> last;  // vehicle -> its reports from one place
  void save(troupe::stream::state_writer& out) const {
    per_minute::save(out);
    out.write(last);
  }
  void load(troupe::stream::state_reader& in) {
    per_minute::load(in);
    in.read(last);
  }

  count_vehicles_logic() { last.reserve(1 << 14); }
  template <class Emit>
  void on(const report& r, Emit&&) {
    const auto s = r.segment();
    auto& m = minutes.at(r.minute);
    m.cars.push_back((static_cast<std::uint64_t>(s) << 32) | static_cast<std::uint32_t>(r.vid));
    auto& k = last[r.vid];
    if (k.reports > 0 && k.time + 30 == r.time && k.lane == r.lane && k.pos == r.pos && k.segment == s) ++k.reports;
    else k = streak{r.time, r.lane, r.pos, s, 1};
    k.time = r.time;
    if (k.reports >= 4)
      m.stopped[(static_cast<std::uint64_t>(s) << 24) | (static_cast<std::uint64_t>(r.lane) << 20) |
                static_cast<std::uint64_t>(r.pos)]
          .insert(r.vid);
    stamp = r.stamp;
  }
  template <class Emit>
  void close(std::int32_t minute, std::uint64_t at, Emit&& emit) {
    minutes.close_until(minute, [&](std::int32_t m, minute_state& st) {
      std::unordered_set<std::int32_t> accidents;
      for (auto& [place, who] : st.stopped)
        if (who.size() >= 2) accidents.insert(static_cast<std::int32_t>(place >> 24));
      auto& cars = st.cars;
      std::sort(cars.begin(), cars.end());
      cars.erase(std::unique(cars.begin(), cars.end()), cars.end());
      for_each_run(
          cars, [](std::uint64_t x) { return x >> 32; },
          [&](std::size_t i, std::size_t j) {
            count c;
            c.segment = static_cast<std::int32_t>(cars[i] >> 32);
            c.minute = m;
            c.cars = static_cast<std::int32_t>(j - i);
            c.accident = accidents.count(c.segment) != 0;
            c.stamp = at;
            emit(std::move(c));
          });
    });
  }
};

/// A segment statistic as a notification for the sink.
inline notification segment_notification(notification::kind_t kind, std::int32_t segment, std::int32_t minute,
                                         std::int32_t value, std::uint64_t stamp) {
  notification n;
  n.kind = kind;
  n.segment = segment;
  n.minute = minute;
  n.value = value;
  n.stamp = stamp;
  return n;
}

struct lav_notification_logic : per_tuple {
  static constexpr const char* kind = "toll_notification_las";
  template <class Emit>
  void on(const lav& l, Emit&& emit) {
    emit(segment_notification(notification::lav, l.segment, l.minute, l.mph, l.stamp));
  }
};

struct count_notification_logic : per_tuple {
  static constexpr const char* kind = "toll_notification_cv";
  template <class Emit>
  void on(const count& c, Emit&& emit) {
    auto n = segment_notification(notification::count, c.segment, c.minute, c.cars, c.stamp);
    n.accident = c.accident;
    emit(std::move(n));
  }
};

/// The sink's join: a crossing in minute m pays 2 * (cars - 50)^2 when the
/// segment's LAV for m is below 40 mph, it had more than 50 cars in minute
/// m-1, and no accident happened in minute m-1 in it or the 4 segments
/// downstream; else 0. Crossings of minute m are assessed when m closes
/// (by then the statistics they need have arrived).
struct toll_logic {
  static constexpr const char* kind = "sink";
  by_minute<std::vector<notification>> crossings;
  std::map<std::int32_t, std::unordered_map<std::int32_t, std::int32_t>> lavs;  // minute -> segment -> mph
  std::map<std::int32_t, std::unordered_map<std::int32_t, std::int32_t>> cars;  // minute -> segment -> cars
  std::map<std::int32_t, std::unordered_set<std::int32_t>> accidents;           // minute -> segments
  void save(troupe::stream::state_writer& out) const {
    crossings.save(out);
    out.write(std::tie(lavs, cars, accidents));
  }
  void load(troupe::stream::state_reader& in) {
    crossings.load(in);
    auto all = std::tie(lavs, cars, accidents);
    in.read(all);
  }

  template <class Emit>
  void on(const notification& n, Emit&&) {
    switch (n.kind) {
      case notification::crossing:
        crossings.at(n.minute).push_back(n);
        break;
      case notification::lav:
        lavs[n.minute][n.segment] = n.value;
        break;
      case notification::count:
        cars[n.minute][n.segment] = n.value;
        if (n.accident) accidents[n.minute].insert(n.segment);
        break;
    }
  }
  template <class Emit>
  void close(std::int32_t minute, std::uint64_t, Emit&& emit) {
    crossings.close_until(minute, [&](std::int32_t m, std::vector<notification>& cs) {
      for (auto& c : cs) emit(assess(c, m));
    });
    // Statistics older than the next minute's crossings need are done with.
    lavs.erase(lavs.begin(), lavs.upper_bound(minute));
    cars.erase(cars.begin(), cars.upper_bound(minute - 1));
    accidents.erase(accidents.begin(), accidents.upper_bound(minute - 1));
  }
  template <class Emit>
  void finish(Emit&& emit) {
    close(crossings.last(), 0, emit);
  }

 private:
  toll assess(const notification& c, std::int32_t m) const {
    toll t;
    t.vid = c.vid;
    t.segment = c.segment;
    t.minute = m;
    if (auto l = lavs.find(m); l != lavs.end())
      if (auto s = l->second.find(c.segment); s != l->second.end()) t.lav = s->second;
    if (auto k = cars.find(m - 1); k != cars.end())
      if (auto s = k->second.find(c.segment); s != k->second.end()) t.cars = s->second;
    if (t.lav >= 0 && t.lav < 40 && t.cars > 50 && !accident_ahead(c.segment, m - 1))
      t.amount = 2 * (t.cars - 50) * (t.cars - 50);
    return t;
  }
  bool accident_ahead(std::int32_t segment, std::int32_t m) const {
    auto a = accidents.find(m);
    if (a == accidents.end()) return false;
    const int seg = segment_of(segment), step = direction_of(segment) == 0 ? 1 : -1;
    for (int i = 0; i <= 4; ++i) {
      const int s = seg + step * i;
      if (s < 0 || s >= segments) break;
      if (a->second.count(segment - seg + s) != 0) return true;
    }
    return false;
  }
};

// -- the application ---------------------------------------------------------------

/// What a run leaves besides its figures (when run with keep = true):
/// every toll assessed, and the statistics the sink received.
struct outcome {
  run_result result;
  std::vector<toll> tolls;                                             // sorted
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> lavs;  // (segment, minute) -> mph
  std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> cars;  // (segment, minute) -> cars
  std::set<std::pair<std::int32_t, std::int32_t>> accidents;           // (segment, minute)
  std::uint64_t assessed = 0, charged = 0;                             // tolls, and those above 0
};

/// Runs LR; input from c.input (empty: generated, c.extra["minutes"] of
/// traffic on c.extra["xways"] expressways). The sink has one replica.
outcome run(troupe::actor_system& sys, const cli& c, bool keep = false);

}  // namespace troupe_apps::lr

#if TROUPE_APPS_NET
/// A line holds a pointer into this process's input: it never crosses. A
/// split run that would send one fails with this error (place the source and
/// the dispatcher on one rank).
template <>
struct troupe::net::codec<troupe_apps::lr::line> {
  static std::string name() { return "lr.line"; }
  [[noreturn]] static void write(writer& /*w*/, const troupe_apps::lr::line& /*l*/) { refuse(); }
  [[noreturn]] static void read(reader& /*r*/, troupe_apps::lr::line& /*l*/) { refuse(); }

 private:
  [[noreturn]] static void refuse() {
    throw decode_error(
        "troupe-lr: a line points into its process's input and cannot cross processes: run the "
        "source and the dispatcher on one rank");
  }
};
#endif
