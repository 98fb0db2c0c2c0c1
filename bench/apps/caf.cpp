// apps_max_rate, CAF 0.17: each application as event-based actors, one per
// operator, with the operator code of apps/ (the input, parsing and model
// come from troupe_apps; splitter, counter and predictor repeat the loops of
// wc.cpp and fd.cpp, which keeps them private).
//
// The source replays the in-memory input cyclically, stamping each tuple with
// troupe::stream::now(). Per activation it sends at most `slice` tuples and
// then a message to itself. Before each tuple it reads the length of the
// first operator's mailbox; at `limit` or more it ends the activation without
// sending (it tries again on its next activation).
//
// Why not CAF's own length: scheduled_actor::mailbox().size() exists in 0.17,
// but fifo_inbox::size() calls fetch_more(), which takes the head of the
// lock-free inbox (lifo_inbox::take_head: "only the owner is allowed to call
// this member function") and appends to the owner's private queue. Called from
// the source while the receiver runs, that races with the receiver's own
// dequeue; called while the receiver is blocked it swaps the "reader blocked"
// tag for "empty" and the next enqueue no longer schedules the receiver. So the
// length is kept beside the mailbox instead: the source adds one per tuple
// before sending it and the receiver takes one off as it starts handling it,
// both relaxed atomics. That is exactly the number of the source's tuples in
// the receiver's mailbox (the source is its only sender of tuples).
//
// After `seconds` the source sends an end-of-stream message down the chain
// and quits; per-sender FIFO order puts it behind every tuple, each operator
// forwards it, and the sink, having drained, tells the main thread.
#include "impls.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <troupe/stream/metrics.hpp>

#include "common/caf_support.hpp"
#include "fd/fd.hpp"
#include "wc/wc.hpp"

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::wc::line)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::wc::word)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::wc::count)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe_apps::fd::transaction)

namespace {

namespace wc = troupe_apps::wc;
namespace fd = troupe_apps::fd;
using troupe::stream::now;

using go_atom = caf::atom_constant<caf::atom("go")>;
using eos_atom = caf::atom_constant<caf::atom("eos")>;
using done_atom = caf::atom_constant<caf::atom("done")>;

constexpr int slice = 100;             // tuples per source activation, at most
constexpr std::int64_t limit = 1024;   // the first operator's mailbox length that holds the source back

/// The number of the source's tuples in the first operator's mailbox.
struct mailbox_gauge {
  alignas(64) std::atomic<std::int64_t> n{0};
  std::int64_t get() const noexcept { return n.load(std::memory_order_relaxed); }
  void add() noexcept { n.fetch_add(1, std::memory_order_relaxed); }
  void take() noexcept { n.fetch_sub(1, std::memory_order_relaxed); }
};

/// Written by the actors before they pass the end-of-stream message on (so
/// the main thread reads them after the sink's done message).
struct results {
  std::uint64_t sent = 0;        // source
  std::uint64_t words = 0;       // wc splitter
  std::uint64_t sink = 0;        // sink
  troupe::stream::latency_histogram latency;  // sink, every tuple
};

// -- source --------------------------------------------------------------------

template <class T>
struct source_state {
  std::shared_ptr<const std::vector<T>> data;
  std::size_t pos = 0;
  std::uint64_t sent = 0;
  std::uint64_t deadline = 0;  // now() at which the source stops; 0 before the first activation
};

template <class T>
caf::behavior source(caf::stateful_actor<source_state<T>>* self, std::shared_ptr<const std::vector<T>> data,
                     caf::actor next, mailbox_gauge* gauge, double seconds, results* res) {
  self->state.data = std::move(data);
  return {[=](go_atom) {
    auto& st = self->state;
    const auto t = now();
    if (st.deadline == 0) st.deadline = t + static_cast<std::uint64_t>(seconds * 1e9);
    if (t >= st.deadline) {
      res->sent = st.sent;
      self->send(next, eos_atom::value);
      self->quit();
      return;
    }
    const auto& in = *st.data;
    for (int k = 0; k < slice && gauge->get() < limit; ++k) {
      T v = in[st.pos];
      if (++st.pos == in.size()) st.pos = 0;
      v.stamp = now();
      gauge->add();
      self->send(next, std::move(v));
      ++st.sent;
    }
    self->send(self, go_atom::value);
  }};
}

// -- wc ----------------------------------------------------------------------------

struct splitter_state {
  std::uint64_t words = 0;
};

caf::behavior splitter(caf::stateful_actor<splitter_state>* self, caf::actor next, mailbox_gauge* gauge,
                       results* res) {
  return {[=](const wc::line& l) {
            gauge->take();
            const std::string& s = l.text;
            std::size_t from = 0;
            while (from <= s.size()) {
              std::size_t to = s.find(' ', from);
              if (to == std::string::npos) to = s.size();
              if (to > from) {
                self->send(next, wc::word{s.substr(from, to - from), l.stamp});
                ++self->state.words;
              }
              from = to + 1;
            }
          },
          [=](eos_atom) {
            res->words = self->state.words;
            self->send(next, eos_atom::value);
            self->quit();
          }};
}

struct counter_state {
  std::unordered_map<std::string, std::uint64_t> counts;
};

caf::behavior counter(caf::stateful_actor<counter_state>* self, caf::actor next) {
  return {[=](wc::word& w) {
            auto n = ++self->state.counts[w.text];
            self->send(next, wc::count{std::move(w.text), n, w.stamp});
          },
          [=](eos_atom) {
            self->send(next, eos_atom::value);
            self->quit();
          }};
}

struct sink_state {
  std::uint64_t n = 0;
  std::set<std::string> outliers;  // fd: the forwarded transactions' ids, as fd.cpp's sink keeps them
};

caf::behavior wc_sink(caf::stateful_actor<sink_state>* self, caf::actor main, results* res) {
  return {[=](const wc::count& c) {
            res->latency.record(now() - c.stamp);
            ++self->state.n;
          },
          [=](eos_atom) {
            res->sink = self->state.n;
            self->send(main, done_atom::value);
            self->quit();
          }};
}

// -- fd ----------------------------------------------------------------------------

struct predictor_state {
  struct recent {
    std::array<std::uint8_t, fd::window> s{};
    std::size_t n = 0;  // states seen (the last `window` are kept, oldest first)
  };
  std::unordered_map<std::string, recent> customers;
};

caf::behavior predictor(caf::stateful_actor<predictor_state>* self, caf::actor next, const fd::model* m,
                        mailbox_gauge* gauge) {
  return {[=](fd::transaction& t) {
            gauge->take();
            auto& r = self->state.customers[std::string{t.customer, 3}];
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
            if (t.score > fd::threshold) self->send(next, t);
          },
          [=](eos_atom) {
            self->send(next, eos_atom::value);
            self->quit();
          }};
}

caf::behavior fd_sink(caf::stateful_actor<sink_state>* self, caf::actor main, results* res) {
  return {[=](const fd::transaction& t) {
            res->latency.record(now() - t.stamp);
            self->state.outliers.insert(t.id);
            ++self->state.n;
          },
          [=](eos_atom) {
            res->sink = self->state.n;
            self->send(main, done_atom::value);
            self->quit();
          }};
}

// -- runs --------------------------------------------------------------------------

/// Starts the source, waits for the sink's done message, fills `o`.
void measure(caf::scoped_actor& self, const caf::actor& src, const results& res, const mailbox_gauge& gauge,
             bench::apps_max_rate::outcome& o) {
  bench::stopwatch sw;
  self->send(src, go_atom::value);
  self->receive([](done_atom) {});
  o.elapsed_s = sw.seconds();
  o.source_tuples = res.sent;
  o.sink_tuples = res.sink;
  o.words = res.words;
  o.p50_us = static_cast<double>(res.latency.percentile(0.5)) / 1000.0;
  o.p95_us = static_cast<double>(res.latency.percentile(0.95)) / 1000.0;
  bench::check_eq("latency measurements (tuples at the sink)", static_cast<std::int64_t>(res.sink),
                  static_cast<std::int64_t>(res.latency.count()));
  bench::check_eq("source tuples left in the first operator's mailbox gauge", 0, gauge.get());
}

// One CAF system for one app: `spawn(sys, self, gauge, results)` builds the
// actors back to front and returns the source.
template <class Spawn>
void run_app(const bench::params& p, bench::apps_max_rate::outcome& o, Spawn spawn) {
  mailbox_gauge gauge;
  auto res = std::make_unique<results>();
  const auto workers = p.get("workers");
  bench::caf_support::config cfg{workers};
  caf::actor_system sys{cfg};
  bench::caf_support::check_workers(sys, workers);
  caf::scoped_actor self{sys};
  auto src = spawn(sys, self, gauge, res.get());
  measure(self, src, *res, gauge, o);
}

void run_wc(const bench::params& p, bench::apps_max_rate::outcome& o) {
  auto data = std::make_shared<std::vector<wc::line>>();
  for (auto& l : troupe_apps::read_lines(bench::apps_max_rate::wc_input())) data->push_back(wc::line{std::move(l), 0});
  run_app(p, o, [&](caf::actor_system& sys, caf::scoped_actor& self, mailbox_gauge& gauge, results* res) {
    auto snk = sys.spawn(wc_sink, caf::actor_cast<caf::actor>(self), res);
    auto cnt = sys.spawn(counter, snk);
    auto spl = sys.spawn(splitter, cnt, &gauge, res);
    return sys.spawn(source<wc::line>, std::shared_ptr<const std::vector<wc::line>>{data}, spl, &gauge,
                     static_cast<double>(p.get("seconds")), res);
  });
}

void run_fd(const bench::params& p, bench::apps_max_rate::outcome& o) {
  const auto m = fd::model::load(bench::apps_max_rate::fd_model());
  auto data = std::make_shared<std::vector<fd::transaction>>();
  for (auto& l : fd::generate(800'000, 10'000, m)) {
    fd::transaction t;
    if (fd::parse(l, m, t)) data->push_back(t);
  }
  bench::check_eq("fd: generated transactions that parse", 800'000, static_cast<std::int64_t>(data->size()));
  run_app(p, o, [&](caf::actor_system& sys, caf::scoped_actor& self, mailbox_gauge& gauge, results* res) {
    auto snk = sys.spawn(fd_sink, caf::actor_cast<caf::actor>(self), res);
    auto pred = sys.spawn(predictor, snk, &m, &gauge);
    return sys.spawn(source<fd::transaction>, std::shared_ptr<const std::vector<fd::transaction>>{data}, pred, &gauge,
                     static_cast<double>(p.get("seconds")), res);
  });
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  apps_max_rate::outcome o;
  o.app = p.get("app");
  o.seconds = static_cast<double>(p.get("seconds"));
  apps_max_rate::app_name(o.app);  // rejects an unknown app
  if (o.app == apps_max_rate::app_wc) run_wc(p, o);
  else run_fd(p, o);
  o.check();
  return o.report();
}
