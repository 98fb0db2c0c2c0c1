// sink.cpp: the libnats side of the NATS sink: asynchronous JetStream
// publishes, their acknowledgements, and sending again what a restarted
// server never answered.
#include "troupe/nats/sink.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "client.hpp"

namespace troupe::nats::detail {

namespace {
std::string who(const sink_config& cfg) { return "nats sink '" + cfg.subject + "'"; }
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void check(const sink_config& cfg) {
  if (cfg.subject.empty()) throw nats_error{who(cfg) + ": no subject (sink_config::subject)"};
  if (cfg.subject.find_first_of(" *>") != std::string::npos)
    throw nats_error{who(cfg) + ": a subject to publish to may not hold ' ', '*' or '>'"};
  if (cfg.max_pending < 1) throw nats_error{who(cfg) + ": max_pending must be at least 1"};
  if (cfg.ack_timeout.count() < 1) throw nats_error{who(cfg) + ": ack_timeout must be at least 1 ms"};
}

std::string run_token(std::size_t replica) {
  std::random_device rd;
  const std::uint64_t r = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(now_ns());
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx-%zu", static_cast<unsigned long long>(r), replica);
  return buf;
}

struct publisher::impl {
  sink_config cfg;
  std::atomic<std::uint64_t> published{0};  // handed to libnats (sent again: not counted twice)
  std::atomic<std::uint64_t> answered{0};   // acknowledged, or given up to be sent again
  std::atomic<std::uint64_t> duplicates{0};
  std::mutex m;
  std::string failure;
  std::unique_ptr<connection> conn;

  std::vector<natsMsg*> retry;  // answered "no responders" (a server starting): sent again later
  std::int64_t last_retry_ns = 0;

  static void on_ack(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
    auto& self = *static_cast<impl*>(closure);
    if (pae != nullptr && (pae->Err == NATS_NO_RESPONDERS || pae->Err == NATS_TIMEOUT)) {
      std::lock_guard<std::mutex> g{self.m};
      self.retry.push_back(msg);
      return;
    }
    if (pa != nullptr && pa->Duplicate) self.duplicates.fetch_add(1, std::memory_order_relaxed);
    if (pae != nullptr) {
      std::lock_guard<std::mutex> g{self.m};
      if (self.failure.empty())
        self.failure = describe(who(self.cfg) + ": the server refused a message", pae->Err, pae->ErrCode) +
                       (pae->ErrText != nullptr ? std::string{" ("} + pae->ErrText + ")" : std::string{});
    }
    natsMsg_Destroy(msg);
    self.answered.fetch_add(1, std::memory_order_release);
  }

  /// Sends again what was answered "no responders", at most every 100 ms.
  void send_retries() {
    std::vector<natsMsg*> again;
    {
      std::lock_guard<std::mutex> g{m};
      if (retry.empty() || now_ns() - last_retry_ns < 100'000'000) return;
      again.swap(retry);
      last_retry_ns = now_ns();
    }
    for (natsMsg* msg : again) {
      const natsStatus s = js_PublishMsgAsync(conn->js(), &msg, nullptr);
      if (s != NATS_OK) {
        natsMsg_Destroy(msg);
        answered.fetch_add(1, std::memory_order_release);
        std::lock_guard<std::mutex> g{m};
        if (failure.empty()) failure = describe(who(cfg) + ": sending a message again", s);
      }
    }
  }

  void rethrow() {
    std::lock_guard<std::mutex> g{m};
    if (!failure.empty()) throw nats_error{failure};
  }
};

publisher::publisher(const sink_config& cfg) : impl_{std::make_unique<impl>()} {
  impl_->cfg = cfg;
  jsOptions o;
  jsOptions_Init(&o);
  o.PublishAsync.MaxPending = cfg.max_pending;
  o.PublishAsync.AckHandler = &impl::on_ack;
  o.PublishAsync.AckHandlerClosure = impl_.get();
  o.PublishAsync.StallWait = std::max<std::int64_t>(1, cfg.ack_timeout.count());
  impl_->conn = std::make_unique<connection>(cfg.connection, who(cfg), &o);
  // A subject no stream captures would be answered "no responders", which
  // is also what a server that is starting says: ask once, by name.
  const std::string ask = "{\"subject\":\"" + cfg.subject + "\"}";
  natsMsg* reply = nullptr;
  check(
      who(cfg) + ": looking for the stream of its subject",
      natsConnection_Request(&reply, impl_->conn->nc(), "$JS.API.STREAM.NAMES", ask.data(),
                             static_cast<int>(ask.size()), std::max<std::int64_t>(1, cfg.connection.timeout.count())));
  const std::string_view answer{natsMsg_GetData(reply), static_cast<std::size_t>(natsMsg_GetDataLength(reply))};
  const bool found = answer.find("\"streams\":[\"") != std::string_view::npos;
  const std::string text{answer.substr(0, 200)};
  natsMsg_Destroy(reply);
  if (!found)
    throw nats_error{who(cfg) + ": no JetStream stream captures subject '" + cfg.subject + "' (the server said " +
                     text + ")"};
}

publisher::~publisher() {
  // Unanswered publishes are dropped with the connection (a sink that ends
  // normally waited for them; one that is cancelled is a crash).
  // (js_PublishAsyncGetPendingList of libnats 3.4.1 crashes when nothing
  // was ever published, so the pending list is not taken first.)
  impl_->conn.reset();
  for (natsMsg* msg : impl_->retry) natsMsg_Destroy(msg);
}

void publisher::publish(std::string_view data, std::string_view id) {
  auto& s = *impl_;
  std::string id_text;
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = std::max<std::int64_t>(1, s.cfg.ack_timeout.count());  // unanswered by then: sent again (on_ack)
  if (!id.empty()) {
    id_text.assign(id);
    po.MsgId = id_text.c_str();
  }
  const auto started = now_ns();
  for (;;) {
    const natsStatus r =
        js_PublishAsync(s.conn->js(), s.cfg.subject.c_str(), data.data(), static_cast<int>(data.size()), &po);
    if (r == NATS_OK) break;
    // Too many unanswered (the server is slow or away): send again what is
    // stuck, and go on trying until give_up_after.
    if (r != NATS_TIMEOUT || s.conn->closed() ||
        now_ns() - started > std::chrono::nanoseconds{s.cfg.connection.give_up_after}.count())
      throw nats_error{describe(who(s.cfg) + ": publishing", r)};
    s.rethrow();
    s.send_retries();
  }
  s.published.fetch_add(1, std::memory_order_relaxed);
  if ((s.published.load(std::memory_order_relaxed) & 1023) == 0) {
    s.rethrow();
    s.send_retries();
  }
}

bool publisher::acked() {
  impl_->rethrow();
  impl_->send_retries();
  return impl_->answered.load(std::memory_order_acquire) == impl_->published.load(std::memory_order_relaxed);
}

void publisher::wait_acked() {
  auto& s = *impl_;
  const auto started = now_ns();
  while (!acked()) {
    if (now_ns() - started > std::chrono::nanoseconds{s.cfg.connection.give_up_after}.count())
      throw nats_error{who(s.cfg) + ": " + std::to_string(s.published.load() - s.answered.load()) +
                       " messages unacknowledged by the server after connection.give_up_after"};
    s.send_retries();
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 100;
    (void)js_PublishAsyncComplete(s.conn->js(), &po);  // returns at once when none is pending
    if (s.answered.load(std::memory_order_acquire) != s.published.load(std::memory_order_relaxed))
      std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
}

std::uint64_t publisher::duplicates() const noexcept { return impl_->duplicates.load(std::memory_order_relaxed); }

}  // namespace troupe::nats::detail
