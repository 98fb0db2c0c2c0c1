// A cluster's members in etcd (include/troupe/net/membership.hpp): records
// under <prefix>/<cluster>/members/<name>, each on the lease of the
// registry that wrote it; a keep-alive thread per joined registry, a thread
// per watch. The calls to etcd themselves: etcd.hpp.
//
// A record is JSON, versioned so that a later troupe can read this one's:
//   {"version":1,"endpoint":"tcp://10.0.0.5:7000","public_key":"<Z85>",
//    "incarnation":"<16 hex digits>","attributes":{"zone":"a"}}
#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "etcd.hpp"
#include "troupe/net/launcher.hpp"
#include "troupe/net/membership.hpp"

namespace troupe::net {

namespace detail {
std::string hex(std::uint64_t v);  // 16 hex digits, as the node writes incarnations (src/net/session.cpp)
}

using etcd::json;

namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using namespace std::chrono_literals;

constexpr int record_version = 1;

net_error failure(const std::string& what) { return net_error("troupe::net::registry: " + what); }

void check_name(const char* what, const std::string& s) {
  if (s.empty()) throw failure(std::string{"the "} + what + " is empty");
  if (s.size() > 128)
    throw failure(std::string{"the "} + what + " '" + s.substr(0, 40) + "...' is over 128 characters");
  for (const char c : s) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok)
      throw failure(std::string{"the "} + what + " '" + s + "' holds '" + c +
                    "' (letters, digits, '.', '_' and '-' only)");
  }
}

/// etcd's 64-bit numbers come as JSON strings ("revision":"12").
std::int64_t number(const json& j, const char* field, const char* context) {
  if (!j.is_object() || !j.contains(field)) return 0;  // the gateway leaves out zero values
  const auto& v = j[field];
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    std::int64_t out = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    if (ec == std::errc{} && p == s.data() + s.size()) return out;
  }
  throw failure(std::string{"etcd's answer to "} + context + " holds a " + field +
                " that is not a number: " + v.dump());
}

std::string text_of(const json& j, const char* field) {
  if (!j.contains(field)) return {};
  if (!j[field].is_string()) throw std::invalid_argument(std::string{field} + " is not a string");
  return j[field].get<std::string>();
}

std::string record_of(const member& m) {
  json j = {{"version", record_version},
            {"endpoint", m.address.endpoint},
            {"public_key", m.address.public_key},
            {"incarnation", detail::hex(m.incarnation)},
            {"attributes", m.attributes}};
  return j.dump();
}

/// The member `name` from its record; std::nullopt and `why` when the
/// record is not one.
std::optional<member> member_of(const std::string& name, const std::string& record, std::string& why) {
  const json j = json::parse(record, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    why = "not JSON";
    return std::nullopt;
  }
  try {
    if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != record_version) {
      why = "record version " + (j.contains("version") ? j["version"].dump() : std::string{"missing"}) +
            " (this troupe reads version " + std::to_string(record_version) + ")";
      return std::nullopt;
    }
    member m;
    m.name = name;
    m.address.endpoint = text_of(j, "endpoint");
    m.address.public_key = text_of(j, "public_key");
    (void)peers_from_list(m.address.endpoint);  // net_error naming a malformed endpoint
    if (!m.address.public_key.empty() && !detail::is_z85_key(m.address.public_key))
      throw std::invalid_argument("public_key is not a Z85 CURVE key");
    const std::string inc = text_of(j, "incarnation");
    auto [p, ec] = std::from_chars(inc.data(), inc.data() + inc.size(), m.incarnation, 16);
    if (inc.empty() || inc.size() > 16 || ec != std::errc{} || p != inc.data() + inc.size())
      throw std::invalid_argument("incarnation '" + inc + "' is not 1 to 16 hex digits");
    if (j.contains("attributes")) {
      if (!j["attributes"].is_object()) throw std::invalid_argument("attributes is not an object");
      for (const auto& [k, v] : j["attributes"].items()) {
        if (!v.is_string()) throw std::invalid_argument("attribute '" + k + "' is not a string");
        m.attributes[k] = v.get<std::string>();
      }
    }
    return m;
  } catch (const std::exception& e) {
    why = e.what();
    return std::nullopt;
  }
}

bool same(const member& a, const member& b) {
  return a.name == b.name && a.address.endpoint == b.address.endpoint && a.address.public_key == b.address.public_key &&
         a.incarnation == b.incarnation && a.attributes == b.attributes;
}

std::string describe(const member& m) {
  std::string s = m.address.endpoint + ", incarnation " + detail::hex(m.incarnation);
  return s;
}

}  // namespace

const char* to_string(member_change c) noexcept {
  switch (c) {
    case member_change::joined:
      return "joined";
    case member_change::left:
      return "left";
    case member_change::updated:
      return "updated";
  }
  return "?";
}

// ------------------------------------------------------------------ impl

struct registry::impl {
  registry_config cfg;
  std::vector<std::string> urls;
  std::string dir;  // <prefix>/<cluster>/members/

  std::mutex calls_mtx;  // the API calls, one at a time on their client
  std::unique_ptr<etcd::client> calls;

  std::mutex life_mtx;     // join and leave, one at a time
  mutable std::mutex mtx;  // what follows
  std::condition_variable wake;
  bool is_joined = false;
  bool stop_keeper = false;
  member self;
  std::int64_t lease = 0;
  std::shared_ptr<etcd::client> keeper_client;
  std::thread keeper;

  void log(const std::string& line) const {
    if (cfg.log) cfg.log("troupe::net::registry: " + line);
    else std::fprintf(stderr, "troupe::net::registry: %s\n", line.c_str());
  }

  std::string cluster_name() const { return "cluster '" + cfg.cluster + "'"; }

  /// "the entry 'x' of cluster 'c' is not a member record (why)"
  std::string not_a_record(const std::string& name, const std::string& why) const {
    std::string s = "the entry '" + name + "' of " + cluster_name();
    s += " is not a member record (";
    s += why;
    s += ')';
    return s;
  }

  /// The range of every member's key.
  json members_range() const {
    std::string end = dir;
    end.back() = static_cast<char>(end.back() + 1);  // '/' + 1: just past every key under dir
    return {{"key", etcd::base64_encode(dir)}, {"range_end", etcd::base64_encode(end)}};
  }

  /// The member's name of a key under dir, or "" (another key).
  std::string name_of_key(const json& kv) const {
    const auto key = etcd::base64_decode(text_of(kv, "key"));
    if (!key || key->rfind(dir, 0) != 0 || key->size() == dir.size()) return {};
    std::string name = key->substr(dir.size());
    return name.find('/') == std::string::npos ? name : std::string{};
  }

  /// The member of an etcd key-value, or std::nullopt with `why`.
  std::optional<member> member_of_kv(const json& kv, const std::string& name, std::string& why) const {
    const auto value = etcd::base64_decode(kv.is_object() && kv.contains("value") && kv["value"].is_string()
                                               ? kv["value"].get<std::string>()
                                               : std::string{});
    if (!value) {
      why = "its value is not base64";
      return std::nullopt;
    }
    return member_of(name, *value, why);
  }

  /// Every member, by name; `revision`: etcd's revision they were read at.
  /// An entry that is not a member record is logged, once if `told` keeps
  /// the names logged already (a watch reads the members again and again).
  std::vector<member> list(etcd::client& c, std::int64_t* revision, milliseconds timeout,
                           std::set<std::string>* told = nullptr) const {
    const json answer = c.call("/v3/kv/range", members_range(), timeout);
    if (revision != nullptr) *revision = number(answer.value("header", json::object()), "revision", "a range");
    std::vector<member> out;
    if (!answer.contains("kvs")) return out;
    if (!answer["kvs"].is_array()) throw failure("etcd's answer to a range holds kvs that are not a list");
    for (const auto& kv : answer["kvs"]) {
      const std::string name = name_of_key(kv);
      if (name.empty()) continue;
      std::string why;
      if (auto m = member_of_kv(kv, name, why)) out.push_back(std::move(*m));
      else if (told == nullptr || told->insert(name).second) log(not_a_record(name, why) + ": left out");
    }
    return out;
  }

  std::int64_t grant(etcd::client& c) const {
    const json answer = c.call("/v3/lease/grant", {{"TTL", cfg.lease_ttl.count()}});
    const auto id = number(answer, "ID", "a lease grant");
    if (id == 0) throw failure("etcd granted no lease: " + answer.dump());
    return id;
  }

  void revoke(etcd::client& c, std::int64_t id) const {
    try {
      c.call("/v3/lease/revoke", {{"ID", std::to_string(id)}});
    } catch (const etcd::refused& e) {
      if (e.code() != 5) throw;  // NOT_FOUND: expired already, and its entry with it
    }
  }

  /// Revokes the lease of a join that failed; if etcd does not answer, it
  /// expires on its own.
  void give_back(std::int64_t id) const {
    try {
      revoke(*calls, id);
    } catch (const net_error& e) {
      log(std::string{"a lease granted for a join that failed is left to expire: "} + e.what());
    }
  }

  enum class put_result { put, held, lease_gone };

  /// Writes `m` on lease `id` unless another member holds the name (held:
  /// `holder` describes that one) or the lease expired meanwhile (a stall
  /// longer than the TTL: lease_gone). A call retried after a timeout may
  /// find its own earlier try's entry: that is `put`.
  put_result put_if_free(etcd::client& c, std::int64_t id, const member& m, std::string& holder) const {
    const std::string key = etcd::base64_encode(dir + m.name);
    const json txn = {
        {"compare", json::array({{{"key", key}, {"target", "CREATE"}, {"result", "EQUAL"}, {"create_revision", "0"}}})},
        {"success",
         json::array(
             {{{"request_put",
                {{"key", key}, {"value", etcd::base64_encode(record_of(m))}, {"lease", std::to_string(id)}}}}})},
        {"failure", json::array({{{"request_range", {{"key", key}}}}})}};
    json answer;
    try {
      answer = c.call("/v3/kv/txn", txn);
    } catch (const etcd::refused& e) {
      if (e.code() == 5) return put_result::lease_gone;  // NOT_FOUND: "requested lease not found"
      throw;
    }
    if (answer.value("succeeded", false)) return put_result::put;
    holder = "a record that is not a member's";
    try {
      const auto& kv = answer.at("responses").at(0).at("response_range").at("kvs").at(0);
      if (number(kv, "lease", "a txn") == id) return put_result::put;
      std::string why;
      if (auto other = member_of_kv(kv, m.name, why)) holder = describe(*other);
    } catch (const json::exception&) {
      holder = "an entry etcd did not show";  // gone since: the next join may succeed
    }
    return put_result::held;
  }

  /// Whether the lease `id` was renewed; false: it expired.
  static bool renew(etcd::client& c, std::int64_t id, milliseconds bound) {
    try {
      const json answer = c.call("/v3/lease/keepalive", {{"ID", std::to_string(id)}}, bound);
      return number(answer.value("result", json::object()), "TTL", "a keep-alive") > 0;  // no TTL: expired
    } catch (const etcd::refused& e) {
      if (e.code() == 5) return false;  // NOT_FOUND
      throw;
    }
  }

  void keep_alive(const std::shared_ptr<etcd::client>& c);
};

void registry::impl::keep_alive(const std::shared_ptr<etcd::client>& c) {
  // Three keep-alives per lease_ttl: one may fail (an etcd member killed,
  // a leader election) and the next still comes in time. Each is bounded
  // by half the TTL, so that a member that does not answer leaves time for
  // another one.
  const milliseconds every = std::max<milliseconds>(cfg.lease_ttl / 3, 200ms);
  const milliseconds bound = std::min<milliseconds>(cfg.timeout, std::max<milliseconds>(cfg.lease_ttl / 2, 1s));
  milliseconds next = every;
  bool outage = false;
  std::unique_lock<std::mutex> lk{mtx};
  while (!wake.wait_for(lk, next, [this] { return stop_keeper; })) {
    const std::int64_t id = lease;
    const member me = self;
    lk.unlock();
    std::string note;
    std::int64_t renewed = 0;
    bool lost = false;
    try {
      if (!renew(*c, id, bound)) {
        // etcd dropped the lease: it was unreachable, or this process
        // stalled, for longer than the TTL. Every watcher saw this member
        // leave; it registers again, under the same incarnation.
        const std::int64_t fresh = grant(*c);
        std::string holder;
        const auto put = put_if_free(*c, fresh, me, holder);
        if (put == put_result::lease_gone) throw failure("the new lease expired before it was used");
        if (put == put_result::put) {
          renewed = fresh;
          note = "the lease of '" + me.name + "' in " + cluster_name() +
                 " had expired (etcd unreachable, or this process stalled, for longer than lease_ttl): registered "
                 "again; the others saw it leave and join";
        } else {
          revoke(*c, fresh);
          lost = true;
          note = "the lease of '" + me.name + "' in " + cluster_name() + " expired and another member (" + holder +
                 ") holds the name now: this registry is no longer a member";
        }
      } else if (outage) {
        note = "the keep-alives of '" + me.name + "' go through again";
      }
      outage = false;
      next = every;
    } catch (const net_error& e) {
      if (c->stopped()) return;
      if (!outage) note = "a keep-alive of '" + me.name + "' failed (retrying): " + e.what();
      outage = true;
      next = std::min(every, milliseconds{500});
    }
    if (!note.empty()) log(note);
    lk.lock();
    if (renewed != 0) lease = renewed;
    if (lost) {
      is_joined = false;
      return;
    }
  }
}

// ------------------------------------------------------------------ registry

registry::registry(registry_config cfg) : impl_{std::make_shared<impl>()} {
  auto& m = *impl_;
  if (cfg.etcd.empty()) throw failure("registry_config.etcd is empty (give the client URLs of the etcd members)");
  for (const auto& u : cfg.etcd) m.urls.push_back(etcd::checked_url(u));
  check_name("cluster name", cfg.cluster);
  if (cfg.prefix.empty() || cfg.prefix.front() != '/' || cfg.prefix.back() == '/' ||
      cfg.prefix.find_first_of(" \t\n\r") != std::string::npos)
    throw failure("registry_config.prefix '" + cfg.prefix +
                  "' is not a key prefix like /troupe (a leading '/', no trailing '/', no spaces)");
  if (cfg.lease_ttl < 1s) throw failure("registry_config.lease_ttl must be 1 s or more");
  if (cfg.timeout < 1ms) throw failure("registry_config.timeout must be positive");
  if (cfg.watch_idle < 100ms) throw failure("registry_config.watch_idle must be 100 ms or more");
  m.dir = cfg.prefix + "/" + cfg.cluster + "/members/";
  m.calls = std::make_unique<etcd::client>(m.urls, cfg.timeout);
  m.cfg = std::move(cfg);
}

registry::~registry() {
  try {
    leave();
  } catch (const std::exception& e) {
    impl_->log(std::string{e.what()} + " (the entry goes when its lease expires)");
  }
}

const registry_config& registry::config() const noexcept { return impl_->cfg; }

void registry::join(const member& self) {
  auto& m = *impl_;
  check_name("member name", self.name);
  const auto addresses = peers_from_list(self.address.endpoint);  // net_error naming a malformed endpoint
  if (addresses.size() != 1) throw failure("a member has one endpoint, not '" + self.address.endpoint + "'");
  const auto& ep = self.address.endpoint;
  if (ep.ends_with(":*") || ep.ends_with(":0"))
    throw failure("the endpoint '" + ep + "' of '" + self.name +
                  "' has no port yet: register the endpoint node::listen returned");
  if (!self.address.public_key.empty() && !detail::is_z85_key(self.address.public_key))
    throw failure("the public key of '" + self.name + "' is not a Z85 CURVE key (40 characters)");

  std::lock_guard<std::mutex> life{m.life_mtx};
  {
    std::lock_guard<std::mutex> g{m.mtx};
    if (m.is_joined) throw failure("this registry has joined already, as '" + m.self.name + "'");
  }
  if (m.keeper.joinable()) m.keeper.join();  // ended itself: the name was taken while its lease was expired
  std::int64_t id = 0;
  {
    std::lock_guard<std::mutex> g{m.calls_mtx};
    // A lease that expires before its entry is written (this process
    // stalled longer than the TTL in between) is replaced: a few tries.
    auto put = impl::put_result::lease_gone;
    std::string holder;
    for (int tries = 0; tries < 3 && put == impl::put_result::lease_gone; ++tries) {
      id = m.grant(*m.calls);
      try {
        put = m.put_if_free(*m.calls, id, self, holder);
      } catch (...) {
        m.give_back(id);
        throw;
      }
    }
    if (put == impl::put_result::lease_gone)
      throw failure("'" + self.name + "' could not join " + m.cluster_name() +
                    ": each lease expired before its entry was written (this process stalls for longer than "
                    "lease_ttl)");
    if (put == impl::put_result::held) {
      m.give_back(id);
      throw failure("'" + self.name + "' is already a member of " + m.cluster_name() + " (" + holder +
                    "): its entry goes when it leaves or its lease expires");
    }
  }
  auto c = std::make_shared<etcd::client>(m.urls, m.cfg.timeout);
  std::lock_guard<std::mutex> g{m.mtx};
  m.self = self;
  m.lease = id;
  m.is_joined = true;
  m.stop_keeper = false;
  m.keeper_client = c;
  m.keeper = std::thread{[&m, c] { m.keep_alive(c); }};
}

void registry::leave() {
  auto& m = *impl_;
  std::lock_guard<std::mutex> life{m.life_mtx};
  std::shared_ptr<etcd::client> c;
  {
    std::lock_guard<std::mutex> g{m.mtx};
    m.stop_keeper = true;
    c = m.keeper_client;
  }
  m.wake.notify_all();
  if (c) c->stop();
  if (m.keeper.joinable()) m.keeper.join();
  std::int64_t id = 0;
  std::string name;
  {
    std::lock_guard<std::mutex> g{m.mtx};
    if (m.is_joined) id = m.lease;
    name = m.self.name;
    m.is_joined = false;
    m.lease = 0;
    m.keeper_client.reset();
  }
  if (id == 0) return;
  std::lock_guard<std::mutex> g{m.calls_mtx};
  try {
    m.revoke(*m.calls, id);  // its entry goes with it
  } catch (const net_error& e) {
    throw failure("'" + name + "' could not leave " + m.cluster_name() + ": " + e.what() +
                  " (its entry goes when its lease expires)");
  }
}

bool registry::joined() const {
  std::lock_guard<std::mutex> g{impl_->mtx};
  return impl_->is_joined;
}

std::optional<member> registry::lookup(const std::string& name) {
  auto& m = *impl_;
  check_name("member name", name);
  json answer;
  {
    std::lock_guard<std::mutex> g{m.calls_mtx};
    answer = m.calls->call("/v3/kv/range", {{"key", etcd::base64_encode(m.dir + name)}});
  }
  if (!answer.contains("kvs") || !answer["kvs"].is_array() || answer["kvs"].empty()) return std::nullopt;
  std::string why;
  if (auto found = m.member_of_kv(answer["kvs"][0], name, why)) return found;
  throw failure(m.not_a_record(name, why));
}

std::vector<member> registry::members() {
  std::lock_guard<std::mutex> g{impl_->calls_mtx};
  return impl_->list(*impl_->calls, nullptr, {});
}

member registry::wait_for(const std::string& name, milliseconds timeout) {
  return wait_for(std::vector<std::string>{name}, timeout).front();
}

std::vector<member> registry::wait_for(const std::vector<std::string>& names, milliseconds timeout) {
  auto& m = *impl_;
  for (const auto& n : names) check_name("member name", n);
  const auto deadline = clock::now() + timeout;
  std::string last_error;
  std::vector<std::string> missing = names;
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - clock::now());
    try {
      std::vector<member> all;
      {
        std::lock_guard<std::mutex> g{m.calls_mtx};
        all = m.list(*m.calls, nullptr, std::clamp(left, milliseconds{1}, m.cfg.timeout));
      }
      last_error.clear();
      std::vector<member> out;
      missing.clear();
      for (const auto& n : names) {
        auto it = std::find_if(all.begin(), all.end(), [&n](const member& x) { return x.name == n; });
        if (it == all.end()) missing.push_back(n);
        else out.push_back(*it);
      }
      if (missing.empty()) return out;
    } catch (const net_error& e) {
      last_error = e.what();
    }
    if (clock::now() >= deadline) break;
    std::this_thread::sleep_for(
        std::min(milliseconds{100}, std::chrono::duration_cast<milliseconds>(deadline - clock::now())));
  }
  std::string what;
  for (const auto& n : missing) what += (what.empty() ? "'" : ", '") + n + "'";
  what += " did not register in " + m.cluster_name() + " within " + std::to_string(timeout.count()) + " ms";
  if (!last_error.empty()) what += " (last error: " + last_error + ")";
  throw failure(what);
}

// ------------------------------------------------------------------ watch

struct subscription::state {
  std::shared_ptr<registry::impl> reg;
  std::shared_ptr<etcd::client> client;
  std::function<void(const member_event&)> on_change;
  std::thread thread;
  std::atomic<std::thread::id> runner{};
  std::map<std::string, member> known;  // the watch's thread only
  std::set<std::string> told;           // entries logged as not member records

  void deliver(member_change change, const member& who) {
    try {
      on_change(member_event{change, who});
    } catch (const std::exception& e) {
      reg->log("a watch callback of " + reg->cluster_name() + " threw (the watch goes on): " + e.what());
    } catch (...) {
      reg->log("a watch callback of " + reg->cluster_name() + " threw (the watch goes on)");
    }
  }

  /// `m` is the member `name` now: a join, an update, or a new incarnation
  /// (the old one left).
  void now_is(const member& m) {
    auto it = known.find(m.name);
    if (it == known.end()) {
      known.emplace(m.name, m);
      deliver(member_change::joined, m);
    } else if (it->second.incarnation != m.incarnation) {
      const member old = std::exchange(it->second, m);
      deliver(member_change::left, old);
      deliver(member_change::joined, m);
    } else if (!same(it->second, m)) {
      it->second = m;
      deliver(member_change::updated, m);
    }
  }

  void gone(const std::string& name) {
    auto it = known.find(name);
    if (it == known.end()) return;
    const member old = std::move(it->second);
    known.erase(it);
    deliver(member_change::left, old);
  }

  /// Applies a message of the watch stream; false: read the members again.
  bool apply(const json& message) {
    const auto& r = message.contains("result") ? message["result"] : json{};
    if (!r.is_object()) {
      reg->log("the watch of " + reg->cluster_name() + " got " + message.dump().substr(0, 200) +
               ": reading the members again");
      return false;
    }
    if (r.value("canceled", false)) return false;  // compacted past our revision, or cancelled by etcd
    if (!r.contains("events")) return !client->stopped();
    for (const auto& ev : r["events"]) {
      const json kv = ev.value("kv", json::object());
      const std::string name = reg->name_of_key(kv);
      if (name.empty()) continue;
      if (ev.value("type", std::string{"PUT"}) == "DELETE") {
        gone(name);
        continue;
      }
      std::string why;
      if (auto m = reg->member_of_kv(kv, name, why)) {
        now_is(*m);
      } else {
        reg->log(reg->not_a_record(name, why) + ": taken as gone");
        gone(name);
      }
    }
    return !client->stopped();
  }

  void run() {
    runner.store(std::this_thread::get_id());
    const auto& cfg = reg->cfg;
    bool trouble = false;  // said once per outage in the log
    milliseconds pause{100};
    while (!client->stopped()) {
      std::string why;
      try {
        std::int64_t revision = 0;
        const auto now = reg->list(*client, &revision, {}, &told);
        std::vector<std::string> went;  // gone while we did not watch
        for (const auto& [name, _] : known)
          if (std::none_of(now.begin(), now.end(), [&name](const member& m) { return m.name == name; }))
            went.push_back(name);
        for (const auto& name : went) gone(name);
        for (const auto& m : now) now_is(m);
        json request = reg->members_range();
        request["start_revision"] = std::to_string(revision + 1);
        const auto end = client->stream(
            "/v3/watch", {{"create_request", request}}, cfg.watch_idle,
            [this](json& message) { return apply(message); }, why);
        if (end != etcd::client::ended::broken) {
          if (trouble) reg->log("the watch of " + reg->cluster_name() + " goes on");
          trouble = false;
          pause = milliseconds{100};
          continue;  // idle, or etcd asked us to read again: at once
        }
      } catch (const net_error& e) {
        if (client->stopped()) break;
        why = e.what();
      }
      if (!trouble) reg->log("the watch of " + reg->cluster_name() + " lost etcd (" + why + "): trying again");
      trouble = true;
      client->pause(pause);
      pause = std::min(pause * 2, milliseconds{2000});
    }
  }
};

subscription::~subscription() { cancel(); }
subscription::subscription(subscription&& o) noexcept = default;
subscription& subscription::operator=(subscription&& o) noexcept {
  if (this != &o) {
    cancel();
    state_ = std::move(o.state_);
  }
  return *this;
}

void subscription::cancel() {
  auto st = std::move(state_);
  if (!st) return;
  st->client->stop();
  if (st->runner.load() == std::this_thread::get_id()) st->thread.detach();  // from its own callback
  else st->thread.join();
}

subscription registry::watch(std::function<void(const member_event&)> on_change) {
  if (!on_change) throw failure("watch: no callback given");
  auto st = std::make_shared<subscription::state>();
  st->reg = impl_;
  st->client = std::make_shared<etcd::client>(impl_->urls, impl_->cfg.timeout);
  st->on_change = std::move(on_change);
  // The thread holds the state too: a subscription cancelled from its own
  // callback lets the thread finish on its own.
  st->thread = std::thread{[st] { st->run(); }};
  subscription s;
  s.state_ = std::move(st);
  return s;
}

subscription registry::watch(actor_system& sys, const actor& to) {
  if (!to) throw failure("watch: the actor to tell is an empty handle");
  return watch([&sys, to](const member_event& e) { sys.send(to, e); });
}

subscription registry::follow(node& n) {
  const std::uint64_t self = n.incarnation();
  return watch([&n, self, cluster = impl_->cfg.cluster](const member_event& e) {
    const std::uint64_t inc = e.who.incarnation;
    if (inc == 0 || inc == self) return;
    if (e.change == member_change::left)
      n.retire_peer(inc, "member '" + e.who.name + "' left the cluster '" + cluster +
                             "' in the registry (it left, or its lease expired)");
    else if (e.change == member_change::joined) n.readmit_peer(inc);
  });
}

// ------------------------------------------------------------------ split graphs

std::vector<remote_address> peers_from_registry(registry& reg, const std::vector<std::string>& names,
                                                milliseconds timeout) {
  if (names.empty()) throw failure("peers_from_registry: no member names given");
  std::vector<remote_address> out;
  for (auto& m : reg.wait_for(names, timeout)) out.push_back(std::move(m.address));
  return out;
}

void peers_from_registry(cluster& cl, registry& reg, const std::vector<std::string>& names, milliseconds timeout) {
  if (names.size() != cl.size())
    throw failure("peers_from_registry: " + std::to_string(names.size()) + " member names for a cluster of " +
                  std::to_string(cl.size()) + " ranks");
  const auto peers = peers_from_registry(reg, names, timeout);
  if (peers[cl.rank()].endpoint != cl.self_address().endpoint)
    throw failure("peers_from_registry: '" + names[cl.rank()] + "' (rank " + std::to_string(cl.rank()) +
                  ") is registered at " + peers[cl.rank()].endpoint + ", but this process listens at " +
                  cl.self_address().endpoint);
  for (std::size_t r = 0; r < peers.size(); ++r)
    if (r != cl.rank()) cl.set_peer(r, peers[r]);
}

}  // namespace troupe::net
