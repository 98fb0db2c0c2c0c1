// source.cpp: the libnats side of the NATS source: the durable consumer,
// made again at each start, and the thread that fetches batches.
#include "troupe/nats/source.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "client.hpp"

namespace troupe::nats::detail {

namespace {

std::string who(const source_config& cfg) { return "nats source '" + cfg.stream + "/" + cfg.durable + "'"; }

/// A number token of a reply subject.
bool number(std::string_view t, std::uint64_t& out) {
  if (t.empty() || t.size() > 20) return false;
  std::uint64_t v = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  out = v;
  return true;
}

/// The stream sequence and time of a message from its reply subject:
/// $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>
/// or, with a domain and an account hash after ACK, 12 tokens or more
/// (what natsMsg_GetMetaData reads, without its allocation per message).
bool parse_reply(std::string_view reply, std::uint64_t& seq, std::int64_t& time_ns) {
  std::string_view tokens[12];
  std::size_t n = 0;
  for (std::size_t from = 0; n < 12;) {
    const auto dot = reply.find('.', from);
    tokens[n++] = reply.substr(from, dot == std::string_view::npos ? std::string_view::npos : dot - from);
    if (dot == std::string_view::npos) break;
    from = dot + 1;
  }
  if (n < 9 || tokens[0] != "$JS" || tokens[1] != "ACK") return false;
  const std::size_t at = n == 9 ? 5 : 7;  // the stream sequence
  if (n != 9 && n < 11) return false;
  std::uint64_t t = 0;
  if (!number(tokens[at], seq) || !number(tokens[at + 2], t)) return false;
  time_ns = static_cast<std::int64_t>(t);
  return true;
}

void destroy_messages(std::vector<natsMsg*>* v) {
  for (natsMsg* m : *v) natsMsg_Destroy(m);
  delete v;
}

}  // namespace

/// The source's consumer, delivering from after `after`.
static void consumer_config(const source_config& cfg, std::uint64_t after, jsConsumerConfig& cc) {
  jsConsumerConfig_Init(&cc);
  cc.Durable = cfg.durable.c_str();
  cc.AckPolicy = js_AckAll;
  cc.AckWait = std::int64_t{3600} * 1'000'000'000;  // redelivery is not how it recovers (see source.hpp)
  cc.MaxAckPending = std::int64_t{1} << 40;         // unlimited: acknowledgements come with checkpoints
  cc.MaxDeliver = -1;
  if (!cfg.subject.empty()) cc.FilterSubject = cfg.subject.c_str();
  if (after == 0) {
    cc.DeliverPolicy = js_DeliverAll;
  } else {
    cc.DeliverPolicy = js_DeliverByStartSequence;
    cc.OptStartSeq = after + 1;
  }
}

/// Deletes the source's consumer and makes it again, delivering from after
/// `after`; returns the messages it has to deliver now.
static std::uint64_t remake_consumer(const connection& conn, const source_config& cfg, std::uint64_t after) {
  jsOptions o = conn.request_options();
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus d = js_DeleteConsumer(conn.js(), cfg.stream.c_str(), cfg.durable.c_str(), &o, &jerr);
  if (d != NATS_OK && d != NATS_NOT_FOUND && jerr != JSConsumerNotFoundErr)
    check(who(cfg) + ": deleting the consumer to make it afresh", d, jerr);
  jsConsumerConfig cc;
  consumer_config(cfg, after, cc);
  jsConsumerInfo* ci = nullptr;
  jerr = static_cast<jsErrCode>(0);
  check(who(cfg) + ": making the consumer", js_AddConsumer(&ci, conn.js(), cfg.stream.c_str(), &cc, &o, &jerr), jerr);
  const std::uint64_t pending = ci->NumPending;
  jsConsumerInfo_Destroy(ci);
  return pending;
}

void check(const source_config& cfg) {
  const auto bad = [&](const std::string& what) { throw nats_error{who(cfg) + ": " + what}; };
  if (cfg.stream.empty()) bad("no stream named (source_config::stream)");
  if (cfg.durable.empty()) bad("no durable consumer named (source_config::durable)");
  if (cfg.durable.find_first_of(". *>") != std::string::npos) bad("the durable name may not hold '.', ' ', '*' or '>'");
  if (cfg.batch < 1 || cfg.batch > 1'000'000) bad("batch must be 1 to 1000000, not " + std::to_string(cfg.batch));
  if (cfg.batches_ahead < 1) bad("batches_ahead must be at least 1");
  if (cfg.poll.count() < 1) bad("poll must be at least 1 ms");
}

void check_replicas(const source_config& cfg, std::size_t replicas) {
  if (replicas != 1)
    throw nats_error{who(cfg) + ": runs as 1 replica, not " + std::to_string(replicas) +
                     " (a farm after it spreads the messages)"};
}

void throw_decode_error(const source_config& cfg, const message& m, const char* what) {
  throw nats_error{who(cfg) + ": message " + std::to_string(m.sequence) + " on '" + std::string{m.subject} + "' (" +
                   std::to_string(m.data.size()) + " bytes): " + what};
}

struct pull_reader::impl {
  source_config cfg;
  std::function<void()> wake;
  connection conn;
  natsSubscription* sub = nullptr;  // on `inbox`
  std::string inbox, next_subject;
  bool asked_ahead = false;  // a request is out that fetch() has not read yet
  std::string problem;       // the last status a request ended with
  std::uint64_t start_after = 0;
  std::uint64_t pending = 0;

  std::mutex m;
  std::condition_variable room;
  std::deque<fetched> ready;
  std::string failure;  // fetching failed for good
  bool stop = false;
  std::thread fetcher;

  impl(const source_config& c, std::function<void()> w) : cfg{c}, wake{std::move(w)}, conn{c.connection, who(c)} {}
  impl(const impl&) = delete;
  impl& operator=(const impl&) = delete;
  /// (Also when the reader's constructor failed after subscribing.)
  ~impl() {
    ready.clear();  // the messages go before their subscription
    natsSubscription_Destroy(sub);
  }

  /// Makes the consumer afresh, delivering from after `after` (nullopt:
  /// after the old consumer's ack floor), and binds a pull subscription.
  void make_consumer(std::optional<std::uint64_t> after) {
    jsOptions o = conn.request_options();
    jsErrCode jerr = static_cast<jsErrCode>(0);
    if (!after) {
      jsConsumerInfo* ci = nullptr;
      const natsStatus s = js_GetConsumerInfo(&ci, conn.js(), cfg.stream.c_str(), cfg.durable.c_str(), &o, &jerr);
      if (s == NATS_OK) {
        after = ci->AckFloor.Stream;
        jsConsumerInfo_Destroy(ci);
      } else if (jerr == JSConsumerNotFoundErr || s == NATS_NOT_FOUND) {
        after = 0;
      } else {
        check(who(cfg) + ": consumer info", s, jerr);
      }
    }
    start_after = *after;
    pending = remake_consumer(conn, cfg, start_after);
    // Messages come to an inbox of our own, each batch asked for with a
    // pull request: natsSubscription_Fetch of libnats 3.4 can write past
    // its array when messages of an expired request are still queued
    // (fixed upstream in 3.8, nats.c #749).
    next_subject = "$JS.API.CONSUMER.MSG.NEXT." + cfg.stream + "." + cfg.durable;
    natsInbox* box = nullptr;
    check(who(cfg) + ": inbox", natsInbox_Create(&box));
    inbox = box;
    natsInbox_Destroy(box);
    check(who(cfg) + ": subscribing to " + inbox, natsConnection_SubscribeSync(&sub, conn.nc(), inbox.c_str()));
    check(who(cfg) + ": pending limits", natsSubscription_SetPendingLimits(sub, -1, -1));
  }

  /// Asks for up to `batch` messages, the request waiting up to `poll`.
  natsStatus ask() {
    const std::string body = "{\"batch\":" + std::to_string(cfg.batch) +
                             ",\"expires\":" + std::to_string(std::int64_t{cfg.poll.count()} * 1'000'000) + "}";
    return natsConnection_PublishRequest(conn.nc(), next_subject.c_str(), inbox.c_str(), body.data(),
                                         static_cast<int>(body.size()));
  }

  /// The messages of one request (maybe none). A request that came back
  /// full is followed by the next at once, so that the server sends it
  /// while this one is handed over (one request ahead at most).
  natsStatus fetch(std::vector<natsMsg*>& got) {
    if (!asked_ahead) {
      if (const natsStatus s = ask(); s != NATS_OK) return s;
    }
    asked_ahead = false;
    const auto until = std::chrono::steady_clock::now() + cfg.poll + std::chrono::milliseconds{500};
    while (got.size() < static_cast<std::size_t>(cfg.batch)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
      natsMsg* msg = nullptr;
      const natsStatus s = left.count() <= 0
                               ? NATS_TIMEOUT
                               : natsSubscription_NextMsg(&msg, sub, std::max<std::int64_t>(1, left.count()));
      if (s == NATS_TIMEOUT) {
        // A request that expires is answered (408): none came, so the
        // server or the consumer is away (a restart, a deleted consumer).
        if (!got.empty()) return NATS_OK;
        problem = "nothing (no answer to a pull request within " + std::to_string(cfg.poll.count() + 500) + " ms)";
        return NATS_ERR;
      }
      if (s != NATS_OK) return s;
      const char* status = nullptr;
      if (natsMsg_GetDataLength(msg) == 0 && natsMsgHeader_Get(msg, "Status", &status) == NATS_OK) {
        // 404 (none now) and 408 (expired) end a request; anything else
        // (503: no JetStream or consumer there; 409: the consumer deleted,
        // too many requests waiting) is a problem the loop retries, then
        // reports.
        const std::string code = status != nullptr ? status : "";
        const char* why = nullptr;
        if (natsMsgHeader_Get(msg, "Description", &why) != NATS_OK) why = nullptr;
        problem = code + (why != nullptr ? std::string{" "} + why : std::string{});
        natsMsg_Destroy(msg);
        if (code == "404" || code == "408") return NATS_OK;
        return got.empty() ? NATS_ERR : NATS_OK;
      }
      got.push_back(msg);
    }
    asked_ahead = ask() == NATS_OK;
    return NATS_OK;
  }

  /// The fetching thread: what it throws (out of memory) fails the graph.
  void run() noexcept {
    try {
      loop();
    } catch (const std::exception& e) {
      {
        std::lock_guard<std::mutex> g{m};
        failure = who(cfg) + ": fetching: " + e.what();
      }
      wake();
    }
  }

  void loop() {
    using clock = std::chrono::steady_clock;
    auto failing_since = clock::time_point{};
    std::string last_problem;
    for (;;) {
      {
        std::unique_lock<std::mutex> g{m};
        room.wait(g, [&] { return stop || ready.size() < static_cast<std::size_t>(cfg.batches_ahead); });
        if (stop) return;
      }
      std::vector<natsMsg*> got;
      const natsStatus s = fetch(got);
      if (!got.empty()) {
        failing_since = {};
        fetched f;
        auto* owned = new std::vector<natsMsg*>{got};
        f.owner =
            std::shared_ptr<void>{owned, [](void* p) { destroy_messages(static_cast<std::vector<natsMsg*>*>(p)); }};
        f.messages.reserve(got.size());
        f.replies.reserve(got.size());
        std::string bad;
        for (natsMsg* msg : got) {
          const char* reply = natsMsg_GetReply(msg);
          message x;
          x.subject = natsMsg_GetSubject(msg);
          x.data = std::string_view{natsMsg_GetData(msg), static_cast<std::size_t>(natsMsg_GetDataLength(msg))};
          if (reply == nullptr || !parse_reply(reply, x.sequence, x.time_ns)) {
            bad = who(cfg) + ": a message on '" + std::string{x.subject} + "' without a JetStream reply subject (" +
                  (reply == nullptr ? "none" : reply) + ")";
            break;
          }
          f.messages.push_back(x);
          f.replies.emplace_back(reply);
        }
        {
          std::lock_guard<std::mutex> g{m};
          if (!bad.empty()) failure = bad;
          else ready.push_back(std::move(f));
        }
        wake();
        if (!bad.empty()) return;
        continue;
      }
      if (s == NATS_OK) {  // nothing there now
        failing_since = {};
        if (cfg.stop) wake();  // the node asks cfg.stop
        continue;
      }
      // The server is away (libnats reconnects meanwhile) or refused: try
      // again until give_up_after, then fail the graph.
      last_problem = s == NATS_ERR && !problem.empty() ? who(cfg) + ": asking for messages: the server said " + problem
                                                       : describe(who(cfg) + ": asking for messages", s);
      const auto now = clock::now();
      if (failing_since == clock::time_point{}) failing_since = now;
      if (conn.closed() || now - failing_since > cfg.connection.give_up_after) {
        {
          std::lock_guard<std::mutex> g{m};
          failure = last_problem + (conn.closed() ? " (the connection is closed)" : " (for too long)");
        }
        wake();
        return;
      }
      if (cfg.stop) wake();  // the node asks cfg.stop meanwhile
      std::unique_lock<std::mutex> g{m};
      room.wait_for(g, cfg.poll, [&] { return stop; });
      if (stop) return;
    }
  }
};

pull_reader::pull_reader(const source_config& cfg, std::optional<std::uint64_t> after, std::function<void()> wake)
    : impl_{std::make_unique<impl>(cfg, std::move(wake))} {
  impl_->make_consumer(after);
  impl_->fetcher = std::thread{[this] { impl_->run(); }};
}

pull_reader::~pull_reader() {
  halt();  // then ~impl: the subscription goes; the consumer stays (it is durable)
}

std::uint64_t pull_reader::start_after() const noexcept { return impl_->start_after; }
std::uint64_t pull_reader::pending_at_start() const noexcept { return impl_->pending; }

bool pull_reader::take(fetched& out) {
  {
    std::lock_guard<std::mutex> g{impl_->m};
    if (impl_->ready.empty()) {
      if (!impl_->failure.empty()) throw nats_error{impl_->failure};
      return false;
    }
    out = std::move(impl_->ready.front());
    impl_->ready.pop_front();
  }
  impl_->room.notify_one();
  return true;
}

void pull_reader::halt() {
  {
    std::lock_guard<std::mutex> g{impl_->m};
    impl_->stop = true;
  }
  impl_->room.notify_all();
  if (impl_->fetcher.joinable()) impl_->fetcher.join();
  impl_->ready.clear();
}

bool pull_reader::halted() const noexcept { return !impl_->fetcher.joinable(); }

void pull_reader::ack_sync(const std::string& reply) {
  natsMsg* answer = nullptr;
  const natsStatus s = natsConnection_RequestString(&answer, impl_->conn.nc(), reply.c_str(), "+ACK",
                                                    std::max<std::int64_t>(1, impl_->cfg.connection.timeout.count()));
  natsMsg_Destroy(answer);
  check(who(impl_->cfg) + ": acknowledging what it read", s);
}

void settle(const source_config& cfg, std::uint64_t position) {
  const connection conn{cfg.connection, who(cfg)};
  (void)remake_consumer(conn, cfg, position);
}

void pull_reader::ack(const std::string& reply) {
  // AckAll: this acknowledges every message before it too. A lost one
  // costs nothing under checkpoints (a resumed source starts from its
  // checkpoint); a fresh run would start from an earlier floor.
  natsConnection_PublishString(impl_->conn.nc(), reply.c_str(), "+ACK");
}

}  // namespace troupe::nats::detail
