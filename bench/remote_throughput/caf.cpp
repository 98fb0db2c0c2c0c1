// remote_throughput, CAF 0.17 io: the server process publishes an
// event-based counting actor (middleman().publish on port 0: CAF binds an
// ephemeral port and returns it); the client gets a proxy with
// middleman().remote_actor and a scoped (blocking) actor sends the messages.
// Payload: a std::array<char, 64>, announced to CAF as the message type
// "payload64" (add_message_type) in both processes.
//
// Windows: a sender that never waits makes CAF queue the messages without
// bound (in the proxy's BASP broker and the receiver's mailbox) until memory
// runs out, so after every `window` (10'000) messages the sender also sends a
// window request, which the receiver answers with its count so far; while
// more than `windows_in_flight` (2) windows are unanswered the sender waits
// for the answers (at most 3 windows, 30'000 messages, on the way). Each
// answer's count is checked too. The end marker (done) is answered with the
// final count: the acknowledgement that ends the measured region.
// Both processes: CAF's scheduler with 1 worker, plus the middleman's own
// I/O thread.
#include "impls.hpp"

#include <array>
#include <chrono>
#include <string>

#include <caf/io/all.hpp>

#include "common/caf_remote_support.hpp"
#include "common/caf_support.hpp"
#include "common/peer_process.hpp"

namespace {

using payload = std::array<char, bench::remote_throughput::payload_bytes>;

using ready_atom = caf::atom_constant<caf::atom("ready")>;
using window_atom = caf::atom_constant<caf::atom("window")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;

constexpr std::int64_t window = 10'000;
constexpr std::int64_t windows_in_flight = 2;

/// Longest wait for one answer (the run's deadline bounds the whole run).
constexpr std::chrono::seconds answer_timeout{10};

/// caf_support::config with 1 worker, the io module (the middleman) and the
/// payload type.
struct remote_config : bench::caf_support::config {
  remote_config() : config{1} {
    load<caf::io::middleman>();
    add_message_type<payload>("payload64");
  }
};

struct counter_state {
  std::int64_t counted = 0;
};

caf::behavior counter(caf::stateful_actor<counter_state>* self) {
  auto reply = [self](auto... xs) { self->send(caf::actor_cast<caf::actor>(self->current_sender()), xs...); };
  return {
      [=](const payload&) { ++self->state.counted; },
      [=](ready_atom) { return ready_atom::value; },
      [=](window_atom, std::int64_t sent) { reply(window_atom::value, sent, self->state.counted); },
      [=](done_atom) { reply(done_atom::value, self->state.counted); },
      [=](stop_atom) { self->quit(); },
  };
}

/// The server process: publishes the counter, reports its port and waits
/// until the counter has quit (the client's stop message) or the deadline.
void serve(const bench::peer::reporter& report, bench::peer::clock::time_point deadline) {
  remote_config cfg;
  caf::actor_system sys{cfg};
  auto server = sys.spawn(counter);
  bench::caf_remote_support::publish_and_wait(sys, server, report, deadline);
}

}  // namespace

bench::sample bench::run_caf(const params& p) {
  const auto messages = p.get("messages");
  const auto deadline = peer::deadline_from_now(remote_throughput::time_limit(messages));
  peer::server_process server{[deadline](const peer::reporter& report) { serve(report, deadline); }};
  const auto port = server.ports(deadline).at(0);

  remote_config cfg;
  caf::actor_system sys{cfg};
  caf_support::check_workers(sys, 1);
  const caf::actor remote = caf_remote_support::connect(sys, port);
  caf::scoped_actor self{sys};

  std::string failure;
  self->request(remote, answer_timeout, ready_atom::value)
      .receive([](ready_atom) {}, [&](caf::error& err) { failure = "handshake failed: " + sys.render(err); });
  check(failure.empty(), failure);

  std::int64_t windows_sent = 0;
  std::int64_t windows_answered = 0;
  std::int64_t counted = -1;
  auto await_answer = [&] {
    self->receive(
        [&](window_atom, std::int64_t sent, std::int64_t n) {
          ++windows_answered;
          if (n != sent && failure.empty())
            failure = "window answer: the receiver counted " + std::to_string(n) + " of the first " +
                      std::to_string(sent) + " messages";
        },
        [&](done_atom, std::int64_t n) { counted = n; },
        caf::after(answer_timeout) >> [&] { failure = "no answer from the receiver within 10 s"; });
  };

  payload data;
  data.fill('x');
  stopwatch sw;
  for (std::int64_t i = 1; i <= messages && failure.empty(); ++i) {
    self->send(remote, data);
    if (i % window == 0) {
      self->send(remote, window_atom::value, i);
      ++windows_sent;
      while (windows_sent - windows_answered > windows_in_flight && failure.empty()) await_answer();
      if (peer::clock::now() >= deadline) failure = "deadline passed after " + std::to_string(i) + " messages";
    }
  }
  if (failure.empty()) self->send(remote, done_atom::value);
  while (counted < 0 && failure.empty()) {
    await_answer();
    if (peer::clock::now() >= deadline) failure = "deadline passed waiting for the acknowledgement";
  }
  sample s;
  s.wall_s = sw.seconds();

  check(failure.empty(), failure);  // (the server process is killed on the way out)
  self->send(remote, stop_atom::value);
  server.join(deadline);
  check_eq("messages counted by the receiver", messages, counted);
  return s;
}
