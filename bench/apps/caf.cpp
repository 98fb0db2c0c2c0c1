// apps, CAF 0.17: each application as event-based actors, one per replica of
// each operator, with the operator code of apps/ (the input, parsing and
// model come from troupe_apps; the operators repeat the loops of wc.cpp,
// fd.cpp and sd.cpp, which keep theirs private; lr's operators are the logic
// classes of lr.hpp themselves).
//
// Routing. Every actor holds a route to the next operator's replicas and
// picks one per tuple with the troupe graph's policy: by key (std::hash of
// the key modulo the replicas, as troupe::by_key) into counter, predictor and
// moving_average, round robin (per sender) elsewhere. No router actor. The
// sinks keep what the apps' sinks keep in a benchmark run (fd: nothing; sd:
// the spikes' (device, epoch)), each replica in its own set where troupe's
// replicas share one under a mutex; in runs over whole passes (the `passes`
// param) they also keep what tests/caf_apps_test.cpp compares: fd's outlier
// ids, lr's tolls, and the wc counters their final counts. lr's dispatcher
// sends a copy of each report to each of three branches (fan_out: one route
// per branch, as troupe's stream::branches).
//
// Sources. Each source replica replays the whole in-memory input cyclically,
// stamping each tuple with troupe::stream::now(). Per activation it sends at
// most `slice` tuples and then a message to itself. Before each tuple it picks
// the first-operator replica the tuple goes to and reads that replica's
// mailbox gauge; at `limit` or more it ends the activation without sending
// and retries through CAF's timer (delayed_send): its worker is free for the
// operators meanwhile, which also keeps sources from holding every worker when
// there are as many of them as workers (a self-message alone would: CAF's
// default max-throughput lets an actor run on as long as its mailbox has
// messages). A paced source (rate > 0) sends only the tuples due by now (tuple
// k is due k / rate seconds after its start, as in troupe_apps::replay_source)
// and, once it has caught up, sleeps through delayed_send until the next tuple
// is due, but `nap` (50 us) at least: shorter sleeps are below what the timer
// thread's wake-up keeps to anyway, and re-triggering at once would keep a
// core busy at any rate. So a paced source sends bursts of at most 50 us worth
// of tuples (or `slice`, then at once the rest), and idles in between.
//
// Mailbox gauges. scheduled_actor::mailbox().size() exists in 0.17, but
// fifo_inbox::size() calls fetch_more(), which takes the head of the lock-free
// inbox (lifo_inbox::take_head: "only the owner is allowed to call this member
// function") and appends to the owner's private queue. Called from a source
// while the receiver runs, that races with the receiver's own dequeue; called
// while the receiver is blocked it swaps the "reader blocked" tag for "empty"
// and the next enqueue no longer schedules the receiver. So the length is kept
// beside each first-operator replica's mailbox instead: a source adds one per
// tuple before sending it and the receiver takes one off as it starts
// handling it, both relaxed atomics. That is exactly the number of source
// tuples in that mailbox (sources are its only senders of tuples).
//
// End of stream. After `seconds` each source sends an end-of-stream message
// to every replica of the next operator and quits; per-sender FIFO order puts
// it behind that source's tuples. An actor forwards end-of-stream to every
// downstream replica (and quits) once it has one from each of its upstream
// replicas; each sink replica then tells the main thread, which waits for all.
//
// lr (lr.cpp's graph; see impls.hpp): every operator is one of lr.hpp's logic
// classes in a minute_op. The source replays the input with lr.cpp's minute
// clock: after the last report of each minute it sends an end-of-minute marker
// (a `line` with `closes` set) to every dispatcher replica, each counted in
// that replica's mailbox gauge but not held back by it. A minute_op counts the
// markers of all its upstream replicas (lr::minute_markers); on the last one it
// calls logic.close and sends a marker on to every replica of the next
// operator, of every branch (emit.all). At end-of-stream it calls
// logic.finish before passing end-of-stream on. The sink (one replica:
// toll_logic joins the three branches) counts the markers and end-of-stream
// of the three branches' last operators, and the tolls it assesses.
#include "impls.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <troupe/stream/metrics.hpp>

#include "common/caf_support.hpp"
#include "fd/fd.hpp"
#include "lr/lr.hpp"
#include "sd/sd.hpp"
#include "wc/wc.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::wc::line)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::wc::word)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::wc::count)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::fd::transaction)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::sd::reading)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::lr::line)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::lr::report)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::lr::vehicle_speed)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::lr::lav)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::lr::count)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::lr::notification)

namespace {

namespace wc = troupe_apps::wc;
namespace fd = troupe_apps::fd;
namespace lr = troupe_apps::lr;
namespace sd = troupe_apps::sd;
using bench::apps::outcome;
using troupe::stream::now;

using go_atom = caf::atom_constant<caf::atom("go")>;
using eos_atom = caf::atom_constant<caf::atom("eos")>;
using done_atom = caf::atom_constant<caf::atom("done")>;

constexpr int slice = 100;            // tuples per source activation, at most
constexpr std::int64_t limit = 1024;  // the mailbox length of a first-operator replica that holds sources back
constexpr std::chrono::nanoseconds nap{50'000};  // the shortest sleep of a paced source that is ahead

/// The number of source tuples in one first-operator replica's mailbox.
struct mailbox_gauge {
  alignas(64) std::atomic<std::int64_t> n{0};
  std::int64_t get() const noexcept { return n.load(std::memory_order_relaxed); }
  void add() noexcept { n.fetch_add(1, std::memory_order_relaxed); }
  void take() noexcept { n.fetch_sub(1, std::memory_order_relaxed); }
};

/// Added to by the actors as they end (before they pass end-of-stream on),
/// read by the main thread after every sink replica's done message.
struct results {
  std::atomic<std::uint64_t> sent{0};                      // sources
  std::atomic<std::uint64_t> words{0};                     // wc splitters
  std::atomic<std::uint64_t> sink{0};                      // sinks
  std::atomic<std::uint64_t> assessed{0};                  // lr sink: tolls
  std::atomic<std::uint64_t> charged{0};                   // lr sink: tolls above 0
  std::vector<troupe::stream::latency_histogram> latency;  // one per sink replica, every tuple
  // Runs over whole passes: what the application computed, merged in by the
  // actors as they end.
  bool keep = false;
  std::mutex mtx;
  bench::apps::results computed;
  template <class F>
  void merge(F f) {
    if (!keep) return;
    std::lock_guard<std::mutex> guard{mtx};
    f(computed);
  }
};

/// How a route picks a replica by key; nullptr: round robin.
template <class T>
using key_hash = std::size_t (*)(const T&);

/// Where an actor's output goes: the next operator's replicas.
template <class T>
class route {
 public:
  using value_type = T;
  route() = default;
  route(std::vector<caf::actor> to, key_hash<T> key) : to_{std::move(to)}, key_{key} {}

  /// The replica `v` goes to (the next one in turn when round robin).
  std::size_t pick(const T& v) const {
    if (to_.size() == 1) return 0;
    return key_ != nullptr ? key_(v) % to_.size() : next_ % to_.size();
  }
  void send(caf::event_based_actor* self, std::size_t replica, T&& v) {
    ++next_;
    self->send(to_[replica], std::move(v));
  }
  void send(caf::event_based_actor* self, T&& v) { send(self, pick(v), std::move(v)); }
  /// A copy to every replica (markers).
  void send_all(caf::event_based_actor* self, T&& v) const {
    for (auto& a : to_) self->send(a, v);
  }
  void end(caf::event_based_actor* self) const {
    for (auto& a : to_) self->send(a, eos_atom::value);
  }

 private:
  std::vector<caf::actor> to_;
  key_hash<T> key_ = nullptr;
  std::size_t next_ = 0;
};

/// Where an actor's output goes when it is a copy of each tuple to each of
/// several operators (troupe's stream::branches), each with its own route.
template <class T>
class fan_out {
 public:
  using value_type = T;
  fan_out() = default;
  explicit fan_out(std::vector<route<T>> parts) : parts_{std::move(parts)} {}

  void send(caf::event_based_actor* self, T&& v) {
    each(std::move(v), [&](route<T>& r, T&& c) { r.send(self, std::move(c)); });
  }
  void send_all(caf::event_based_actor* self, T&& v) {
    each(std::move(v), [&](route<T>& r, T&& c) { r.send_all(self, std::move(c)); });
  }
  void end(caf::event_based_actor* self) const {
    for (auto& r : parts_) r.end(self);
  }

 private:
  template <class F>
  void each(T&& v, F f) {
    for (std::size_t i = 0; i + 1 < parts_.size(); ++i) f(parts_[i], T{v});
    f(parts_.back(), std::move(v));
  }
  std::vector<route<T>> parts_;
};

/// What an operator's emit(x) does: x to the next operator by `out`;
/// emit.all(x): a copy to each of its replicas (markers).
template <class Out>
struct emitter {
  caf::event_based_actor* self;
  Out* out;
  void operator()(typename Out::value_type&& v) const { out->send(self, std::move(v)); }
  void all(typename Out::value_type&& v) const { out->send_all(self, std::move(v)); }
};

// -- generic actors ------------------------------------------------------------------

/// What a source does to a tuple before sending it (troupe_apps::replay_source's
/// Prepare): nothing. prepare(v, pass, all) may adjust v to its pass over the
/// input (0, 1, ...) and send markers before it with all(marker&&).
struct no_prepare {
  template <class T, class All>
  void operator()(T&, std::uint64_t, All&&) {}
};

template <class T, class Prepare>
struct source_state {
  route<T> out;
  Prepare prepare;
  std::size_t pos = 0;
  std::uint64_t pass = 0;
  std::uint64_t sent = 0;     // tuples of the input
  std::uint64_t markers = 0;  // sent by prepare (to every first-operator replica: counted once, as troupe's send_all)
  std::uint64_t start = 0;    // now() at the first activation
};

/// `gauges`: one per replica of the first operator, in the order of `out`.
template <class T, class Prepare>
caf::behavior source_actor(caf::stateful_actor<source_state<T, Prepare>>* self,
                           std::shared_ptr<const std::vector<T>> data, route<T> out, Prepare prepare,
                           std::span<mailbox_gauge> gauges, double seconds, std::uint64_t passes, double rate,
                           results* res) {
  self->state.out = std::move(out);
  self->state.prepare = std::move(prepare);
  const auto duration_ns = static_cast<std::uint64_t>(seconds * 1e9);
  return {[=](go_atom) {
    auto& st = self->state;
    const auto t = now();
    if (st.start == 0) st.start = t;
    const auto elapsed = t - st.start;
    if (passes != 0 ? st.pass >= passes : elapsed >= duration_ns) {
      res->sent += st.sent + st.markers;
      st.out.end(self);
      self->quit();
      return;
    }
    std::uint64_t budget = slice;
    if (rate > 0) {
      // Tuple k is due k / rate seconds after the start.
      const auto due = static_cast<std::uint64_t>(static_cast<double>(elapsed) * rate / 1e9) + 1;
      if (st.sent >= due) {  // ahead: sleep until the next tuple is due, `nap` at least
        const double ahead_ns = static_cast<double>(st.sent) * 1e9 / rate - static_cast<double>(elapsed);
        self->delayed_send(self, std::max(nap, std::chrono::nanoseconds{static_cast<std::int64_t>(ahead_ns)}),
                           go_atom::value);
        return;
      }
      budget = std::min<std::uint64_t>(budget, due - st.sent);
    }
    const auto& in = *data;
    for (std::uint64_t k = 0; k < budget && (passes == 0 || st.pass < passes); ++k) {
      const auto replica = st.out.pick(in[st.pos]);
      if (gauges[replica].get() >= limit) {
        self->delayed_send(self, std::chrono::nanoseconds{0}, go_atom::value);
        return;
      }
      T v = in[st.pos];
      st.prepare(v, st.pass, [&](T&& m) {
        for (auto& g : gauges) g.add();
        st.out.send_all(self, std::move(m));
        ++st.markers;
      });
      if (++st.pos == in.size()) {
        st.pos = 0;
        ++st.pass;
      }
      v.stamp = now();
      gauges[replica].add();
      st.out.send(self, replica, std::move(v));
      ++st.sent;
    }
    self->send(self, go_atom::value);
  }};
}

/// An operator: `using in`, `using out`, `void operator()(in&, Emit)` that
/// calls emit(out&&) for each output tuple (see emitter), `void
/// end(results&, Emit)` at end-of-stream. A sink: `using in`, `void
/// operator()(const in&)` (what it keeps of a tuple), `void end(results&)`.
struct no_end {
  template <class... Args>
  void end(Args&&...) {}
};

template <class Op, class Out>
struct operator_state {
  Op op;
  Out out;
  std::size_t open = 0;  // upstream replicas that have not ended their stream
};

/// One replica of `op`, sending to `out` (a route or a fan_out); `gauge`: its
/// mailbox gauge when sources feed it.
template <class Op, class Out>
caf::behavior operator_actor(caf::stateful_actor<operator_state<Op, Out>>* self, Op op, Out out, std::size_t upstream,
                             mailbox_gauge* gauge, results* res) {
  self->state.op = std::move(op);
  self->state.out = std::move(out);
  self->state.open = upstream;
  return {[=](typename Op::in& v) {
            if (gauge != nullptr) gauge->take();
            auto& st = self->state;
            st.op(v, emitter<Out>{self, &st.out});
          },
          [=](eos_atom) {
            auto& st = self->state;
            if (--st.open > 0) return;
            st.op.end(*res, emitter<Out>{self, &st.out});
            st.out.end(self);
            self->quit();
          }};
}

template <class Sink>
struct sink_state {
  Sink keep;
  std::uint64_t n = 0;
  std::size_t open = 0;
};

template <class Sink>
caf::behavior sink_actor(caf::stateful_actor<sink_state<Sink>>* self, Sink keep, std::size_t upstream, caf::actor main,
                         troupe::stream::latency_histogram* latency, results* res) {
  self->state.keep = std::move(keep);
  self->state.open = upstream;
  return {[=](const typename Sink::in& v) {
            latency->record(now() - v.stamp);
            self->state.keep(v);
            ++self->state.n;
          },
          [=](eos_atom) {
            auto& st = self->state;
            if (--st.open > 0) return;
            st.keep.end(*res);
            res->sink += st.n;
            self->send(main, done_atom::value);
            self->quit();
          }};
}

/// Tells graph::stage that sources feed it (its replicas keep the gauges).
constexpr bool fed_by_sources = true;

/// One CAF system running one application: `replicas` actors per operator,
/// spawned back to front (sinks first), then the sources, then run().
class graph {
 public:
  explicit graph(outcome& o)
      : o_{o}, gauges_(o.replicas), cfg_{static_cast<std::int64_t>(o.workers)}, sys_{cfg_}, self_{sys_} {
    res_.keep = o.passes != 0;
    bench::caf_support::check_workers(sys_, static_cast<std::int64_t>(o.workers));
  }

  /// `count` sink replicas, each ending after the end-of-stream of `upstream`
  /// replicas (by default `replicas` both).
  template <class Sink>
  std::vector<caf::actor> sinks(Sink keep, std::size_t count = 0, std::size_t upstream = 0) {
    sinks_ = count != 0 ? count : o_.replicas;
    res_.latency.resize(sinks_);
    return replicas(sinks_, [&](std::size_t i) {
      return sys_.spawn(sink_actor<Sink>, keep, upstream != 0 ? upstream : o_.replicas,
                        caf::actor_cast<caf::actor>(self_), &res_.latency[i], &res_);
    });
  }

  /// The replicas of `op`, sending to `out`: a route (the next operator's
  /// replicas, picked by a key or, with nullptr, round robin) or a fan_out.
  template <class Op, class Out = route<typename Op::out>>
  std::vector<caf::actor> stage(Op op, Out out, bool from_sources = false) {
    return replicas(o_.replicas, [&](std::size_t i) {
      return sys_.spawn(operator_actor<Op, Out>, op, out, o_.replicas, from_sources ? &gauges_[i] : nullptr, &res_);
    });
  }

  /// Spawns the sources, sending `data` to `first` by `key` (each tuple
  /// through `prepare` first); runs until every sink has drained and fills in
  /// the outcome.
  template <class T, class Prepare = no_prepare>
  void run(std::shared_ptr<const std::vector<T>> data, const std::vector<caf::actor>& first, key_hash<T> key,
           Prepare prepare = {}) {
    auto& o = o_;
    auto sources = replicas(o.replicas, [&](std::size_t) {
      return sys_.spawn(source_actor<T, Prepare>, data, route<T>{first, key}, prepare, std::span{gauges_}, o.seconds,
                        o.passes, o.rate, &res_);
    });
    bench::stopwatch sw;
    for (auto& s : sources) self_->send(s, go_atom::value);
    for (std::size_t i = 0; i < sinks_; ++i) self_->receive([](done_atom) {});
    o.elapsed_s = sw.seconds();
    o.source_tuples = res_.sent;
    o.sink_tuples = res_.sink;
    o.words = res_.words;
    o.tolls_assessed = res_.assessed;
    o.tolls_charged = res_.charged;
    o.computed = std::move(res_.computed);
    std::sort(o.computed.tolls.begin(), o.computed.tolls.end());
    troupe::stream::latency_histogram latency;
    for (auto& h : res_.latency) latency.merge(h);
    o.p50_us = static_cast<double>(latency.percentile(0.5)) / 1000.0;
    o.p95_us = static_cast<double>(latency.percentile(0.95)) / 1000.0;
    bench::check_eq("latency measurements (tuples at the sink)", static_cast<std::int64_t>(o.sink_tuples),
                    static_cast<std::int64_t>(latency.count()));
    for (auto& g : gauges_) bench::check_eq("source tuples left in a first-operator mailbox gauge", 0, g.get());
  }

 private:
  template <class Spawn>
  std::vector<caf::actor> replicas(std::size_t n, Spawn spawn) {
    std::vector<caf::actor> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(spawn(i));
    return out;
  }

  outcome& o_;
  // The actors use these until they end; declared before the actor system,
  // they outlive it (its destructor waits for every actor).
  results res_;
  std::vector<mailbox_gauge> gauges_;  // one per first-operator replica
  std::size_t sinks_ = 0;
  bench::caf_support::config cfg_;
  caf::actor_system sys_;
  caf::scoped_actor self_;
};

// -- wc ----------------------------------------------------------------------------

struct splitter {
  using in = wc::line;
  using out = wc::word;
  std::uint64_t words = 0;
  template <class Emit>
  void operator()(const wc::line& l, Emit emit) {
    const std::string& s = l.text;
    std::size_t from = 0;
    while (from <= s.size()) {
      std::size_t to = s.find(' ', from);
      if (to == std::string::npos) to = s.size();
      if (to > from) {
        emit(wc::word{s.substr(from, to - from), l.stamp});
        ++words;
      }
      from = to + 1;
    }
  }
  template <class Emit>
  void end(results& r, Emit) {
    r.words += words;
  }
};

struct counter {
  using in = wc::word;
  using out = wc::count;
  std::unordered_map<std::string, std::uint64_t> counts;
  template <class Emit>
  void operator()(wc::word& w, Emit emit) {
    auto n = ++counts[w.text];
    emit(wc::count{std::move(w.text), n, w.stamp});
  }
  template <class Emit>
  void end(results& r, Emit) {
    // Each word goes to one counter replica: the replicas' counts are disjoint.
    r.merge([&](bench::apps::results& c) { c.word_counts.insert(counts.begin(), counts.end()); });
  }
};

struct wc_sink : no_end {
  using in = wc::count;
  void operator()(const wc::count&) {}
};

std::size_t word_key(const wc::word& w) { return std::hash<std::string>{}(w.text); }

void run_wc(outcome& o) {
  auto data = std::make_shared<std::vector<wc::line>>();
  for (auto& l : troupe_apps::read_lines(bench::apps::wc_input())) data->push_back(wc::line{std::move(l), 0});
  graph g{o};
  auto snk = g.sinks(wc_sink{});
  auto cnt = g.stage(counter{}, {snk, nullptr});
  auto spl = g.stage(splitter{}, {cnt, word_key}, fed_by_sources);
  g.run<wc::line>(std::move(data), spl, nullptr);
}

// -- fd ----------------------------------------------------------------------------

struct predictor : no_end {
  using in = fd::transaction;
  using out = fd::transaction;
  const fd::model* m = nullptr;
  struct recent {
    std::array<std::uint8_t, fd::window> s{};
    std::size_t n = 0;  // states seen (the last `window` are kept, oldest first)
  };
  std::unordered_map<std::string, recent> customers;
  template <class Emit>
  void operator()(fd::transaction& t, Emit emit) {
    auto& r = customers[std::string{t.customer, 3}];
    if (r.n < fd::window) {
      r.s[r.n++] = t.state;
    } else {
      for (std::size_t i = 1; i < fd::window; ++i) r.s[i - 1] = r.s[i];
      r.s[fd::window - 1] = t.state;
    }
    if (r.n < fd::window) return;
    double miss = 0;
    for (std::size_t i = 1; i < fd::window; ++i) miss += 1.0 - m->p[r.s[i - 1]][r.s[i]];
    t.score = miss / (fd::window - 1);
    if (t.score > fd::threshold) emit(std::move(t));
  }
};

struct fd_sink {
  using in = fd::transaction;
  bool keep = false;  // the outliers' ids (runs over whole passes); otherwise counted and timed only, as troupe-fd's
  std::set<std::string> ids;
  void operator()(const fd::transaction& t) {
    if (keep) ids.emplace(t.id);
  }
  void end(results& r) {
    r.merge([&](bench::apps::results& c) { c.outliers.merge(ids); });
  }
};

std::size_t customer_key(const fd::transaction& t) { return std::hash<std::string_view>{}({t.customer, 3}); }

void run_fd(outcome& o) {
  const auto m = fd::model::load(bench::apps::fd_model());
  auto data = std::make_shared<std::vector<fd::transaction>>();
  for (auto& l : fd::generate(bench::apps::fd_transactions, 10'000, m)) {
    fd::transaction t;
    if (fd::parse(l, m, t)) data->push_back(t);
  }
  bench::check_eq("fd: generated transactions that parse", static_cast<std::int64_t>(bench::apps::fd_transactions),
                  static_cast<std::int64_t>(data->size()));
  graph g{o};
  predictor pred;
  pred.m = &m;
  auto snk = g.sinks(fd_sink{o.passes != 0, {}});
  auto prd = g.stage(std::move(pred), {snk, nullptr}, fed_by_sources);
  g.run<fd::transaction>(std::move(data), prd, customer_key);
}

// -- sd ----------------------------------------------------------------------------

struct moving_average : no_end {
  using in = sd::reading;
  using out = sd::reading;
  sd::moving_mean mean{bench::apps::sd_window};
  template <class Emit>
  void operator()(sd::reading& r, Emit emit) {
    r.average = mean.add(r.device, r.value);
    emit(std::move(r));
  }
};

struct detector : no_end {
  using in = sd::reading;
  using out = sd::reading;
  template <class Emit>
  void operator()(sd::reading& r, Emit emit) {
    if (std::abs(r.value - r.average) > bench::apps::sd_threshold * r.average) emit(std::move(r));
  }
};

struct sd_sink {
  using in = sd::reading;
  std::set<std::pair<int, std::uint64_t>> spikes;  // (device, epoch), as sd.cpp's sink keeps them
  void operator()(const sd::reading& r) { spikes.emplace(r.device, r.epoch); }
  void end(results& r) {
    r.merge([&](bench::apps::results& c) { c.spikes.merge(spikes); });
  }
};

std::size_t device_key(const sd::reading& r) { return std::hash<int>{}(r.device); }

void run_sd(outcome& o) {
  auto data = std::make_shared<std::vector<sd::reading>>();
  for (auto& l : sd::generate(bench::apps::sd_readings)) {
    sd::reading r;
    if (sd::parse(l, r)) data->push_back(r);
  }
  bench::check_eq("sd: generated readings that parse", static_cast<std::int64_t>(bench::apps::sd_readings),
                  static_cast<std::int64_t>(data->size()));
  graph g{o};
  auto snk = g.sinks(sd_sink{});
  auto det = g.stage(detector{}, {snk, nullptr});
  auto avg = g.stage(moving_average{}, {det, nullptr}, fed_by_sources);
  g.run<sd::reading>(std::move(data), avg, device_key);
}

// -- lr ----------------------------------------------------------------------------

/// An LR operator as an actor's operator (lr::minute_operator, as lr.cpp's
/// minute_node): outputs by emit, markers by emit.all to every replica of
/// the next operator, of every branch.
template <class In, class Out, class Logic>
struct minute_op {
  using in = In;
  using out = Out;
  lr::minute_operator<In, Out, Logic> op;

  minute_op() = default;
  explicit minute_op(std::size_t upstream) : op{upstream} {}
  template <class Emit>
  void operator()(In& x, Emit emit) {
    op.consume(x, emit, [&](Out&& m) { emit.all(std::move(m)); });
  }
  template <class Emit>
  void end(results&, Emit emit) {
    op.logic.finish(emit);
  }
};

/// The sink (one replica): toll_logic joins the three branches; counts the
/// tolls it assesses, and those above 0.
struct lr_sink {
  using in = lr::notification;
  lr::minute_markers markers;
  lr::toll_logic logic;
  std::uint64_t assessed = 0, charged = 0;
  bool keep = false;  // the tolls themselves (runs over whole passes)
  std::vector<lr::toll> tolls;

  lr_sink() = default;
  lr_sink(std::size_t upstream, bool keep) : markers{upstream}, keep{keep} {}
  void operator()(const lr::notification& n) {
    if (n.closes == lr::no_marker) logic.on(n, [](lr::toll&&) {});
    else if (markers.complete(n.closes)) logic.close(n.closes, n.stamp, [this](lr::toll&& t) { record(t); });
  }
  void end(results& r) {
    logic.finish([this](lr::toll&& t) { record(t); });
    r.assessed += assessed;
    r.charged += charged;
    r.merge([&](bench::apps::results& c) { c.tolls.insert(c.tolls.end(), tolls.begin(), tolls.end()); });
  }
  void record(const lr::toll& t) {
    if (keep) tolls.push_back(t);
    ++assessed;
    if (t.amount > 0) ++charged;
  }
};

template <class T>
std::size_t by_vehicle(const T& x) {
  return std::hash<std::int32_t>{}(x.vid);
}
std::size_t by_segment(const lr::vehicle_speed& v) { return std::hash<std::int32_t>{}(v.segment); }
std::size_t by_report_segment(const lr::report& r) { return std::hash<std::int32_t>{}(r.segment()); }

void run_lr(outcome& o) {
  // The input lr::run generates, loaded as it loads it.
  const auto lines = lr::generate(bench::apps::lr_minutes, bench::apps::lr_xways);
  auto in = lr::load(lines);
  bench::check_eq("lr: generated lines that pass lr::check", 0, static_cast<std::int64_t>(in.malformed));
  const auto r = o.replicas;
  graph g{o};
  using lr::count, lr::lav, lr::line, lr::notification, lr::report, lr::vehicle_speed;
  auto snk = g.sinks(lr_sink{3 * r, o.passes != 0}, 1, 3 * r);
  auto pos = g.stage(minute_op<report, notification, lr::crossing_logic>{r}, {snk, nullptr});
  auto las_n = g.stage(minute_op<lav, notification, lr::lav_notification_logic>{r}, {snk, nullptr});
  auto las = g.stage(minute_op<vehicle_speed, lav, lr::last_average_speed_logic>{r}, {las_n, nullptr});
  auto avg = g.stage(minute_op<report, vehicle_speed, lr::average_speed_logic>{r}, {las, by_segment});
  auto cv_n = g.stage(minute_op<count, notification, lr::count_notification_logic>{r}, {snk, nullptr});
  auto cv = g.stage(minute_op<report, count, lr::count_vehicles_logic>{r}, {cv_n, nullptr});
  auto dsp = g.stage(minute_op<line, report, lr::dispatcher_logic>{r},
                     fan_out<report>{{{pos, by_vehicle<report>}, {avg, by_vehicle<report>}, {cv, by_report_segment}}},
                     fed_by_sources);
  g.run<line>(std::move(in.data), dsp, by_vehicle<line>, lr::minute_clock{in.span});
}

}  // namespace

bench::apps::outcome bench::apps::caf_outcome(const params& p) {
  outcome o{p};
  switch (o.id) {
    case apps::app::wc:
      run_wc(o);
      break;
    case apps::app::fd:
      run_fd(o);
      break;
    case apps::app::sd:
      run_sd(o);
      break;
    case apps::app::lr:
      run_lr(o);
      break;
  }
  o.check();
  return o;
}

bench::sample bench::run_caf(const params& p) { return apps::caf_outcome(p).report(); }
