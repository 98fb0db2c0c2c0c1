// The registry's calls to etcd's JSON gateway over libcurl (see etcd.hpp).
#include "etcd.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <utility>

namespace troupe::net::etcd {

namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The largest answer read (a range of every member, a watch message): etcd
/// itself refuses requests over 1.5 MiB, and a cluster's records are small.
constexpr std::size_t max_answer_bytes = std::size_t{64} << 20;

/// How long one wait for the network may last before the loop looks at its
/// deadlines again (curl_multi_poll returns earlier when data comes or on stop()).
constexpr milliseconds poll_slice{250};

/// The first characters of an answer, for an error message.
std::string excerpt(std::string_view text) {
  std::string s{text.substr(0, 120)};
  for (auto& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return text.size() > 120 ? "'" + s + "...'" : "'" + s + "'";
}

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      throw net_error("troupe::net::registry: libcurl did not start");
  });
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const auto v = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                   static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                   static_cast<unsigned char>(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) out += alphabet[(v >> shift) & 63];
  }
  if (const auto rest = bytes.size() - i; rest > 0) {
    std::uint32_t v = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (rest == 2) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += rest == 2 ? alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::array<int, 256> value{};
  value.fill(-1);
  for (int k = 0; k < 64; ++k) value[static_cast<unsigned char>(alphabet[k])] = k;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    int pad = 0;
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      if (c == '=' && last && k >= 2) {
        ++pad;
        v <<= 6;
        continue;
      }
      const int d = value[static_cast<unsigned char>(c)];
      if (d < 0 || pad > 0) return std::nullopt;  // a character outside the alphabet, or data after '='
      v = v << 6 | static_cast<std::uint32_t>(d);
    }
    // Canonical only: the bits that padding leaves over are zero.
    if ((pad == 1 && (v & 0xff) != 0) || (pad == 2 && (v & 0xffff) != 0)) return std::nullopt;
    out += static_cast<char>((v >> 16) & 0xff);
    if (pad < 2) out += static_cast<char>((v >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(v & 0xff);
  }
  return out;
}

std::string checked_url(const std::string& url) {
  const auto bad = [&url](const std::string& why) {
    return net_error("troupe::net::registry: '" + url + "' is not an etcd client URL like http://127.0.0.1:2379 (" +
                     why + ")");
  };
  std::string u = url;
  std::size_t host_at = 0;
  if (u.rfind("http://", 0) == 0) host_at = 7;
  else if (u.rfind("https://", 0) == 0) host_at = 8;
  else throw bad("it does not start with http:// or https://");
  if (!u.empty() && u.back() == '/') u.pop_back();
  const std::string rest = u.substr(host_at);
  if (rest.empty()) throw bad("no host");
  if (rest.find_first_of("/?#@ \t") != std::string::npos) throw bad("only a scheme, a host and a port");
  const auto colon = rest.rfind(':');
  if (colon != std::string::npos && rest.find(']', colon) == std::string::npos) {  // not inside [IPv6]
    const std::string port = rest.substr(colon + 1);
    if (colon == 0) throw bad("no host");
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(port) == 0 || std::stoul(port) > 65535)
      throw bad("the port is not a number from 1 to 65535");
  }
  return u;
}

// ------------------------------------------------------------------ client

struct client::result {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body;
  std::size_t received = 0;
  bool stopped = false, idle = false, too_big = false;
  std::string detail;  // libcurl's error buffer
};

namespace {

struct sink {
  std::string* body;
  std::size_t* received;
  bool* too_big;
};

std::size_t on_write(char* data, std::size_t, std::size_t n, void* user) {
  auto* s = static_cast<sink*>(user);
  if (s->body->size() + n > max_answer_bytes) {
    *s->too_big = true;
    return 0;  // libcurl ends the transfer (CURLE_WRITE_ERROR)
  }
  s->body->append(data, n);
  *s->received += n;
  return n;
}

}  // namespace

client::client(std::vector<std::string> urls, milliseconds timeout) : urls_{std::move(urls)}, timeout_{timeout} {
  init_curl_once();
  if (urls_.empty()) throw net_error("troupe::net::registry: no etcd URL given");
  easy_ = curl_easy_init();
  multi_ = curl_multi_init();
  if (easy_ == nullptr || multi_ == nullptr) {
    curl_easy_cleanup(easy_);
    curl_multi_cleanup(multi_);
    throw net_error("troupe::net::registry: libcurl could not make a handle");
  }
}

client::~client() {
  curl_easy_cleanup(easy_);
  curl_multi_cleanup(multi_);
}

void client::stop() noexcept {
  stop_.store(true, std::memory_order_release);
  curl_multi_wakeup(multi_);
}

void client::pause(milliseconds d) {
  if (!stopped())
    curl_multi_poll(multi_, nullptr, 0, static_cast<int>(std::max<milliseconds::rep>(d.count(), 1)), nullptr);
}

client::result client::perform(const std::string& url, const std::string& body, milliseconds limit, milliseconds idle,
                               const std::function<bool(std::string&)>& on_data) {
  result r;
  std::array<char, CURL_ERROR_SIZE> error{};
  sink s{&r.body, &r.received, &r.too_big};
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_reset(easy_);
  curl_easy_setopt(easy_, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy_, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(easy_, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(easy_, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, &on_write);
  curl_easy_setopt(easy_, CURLOPT_WRITEDATA, &s);
  curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, error.data());
  curl_easy_setopt(easy_, CURLOPT_NOSIGNAL, 1L);
  // etcd is reached directly: an http_proxy meant for the web is not applied to it.
  curl_easy_setopt(easy_, CURLOPT_PROXY, "");
  const auto connect = limit.count() > 0 ? std::min(limit, timeout_) : timeout_;
  curl_easy_setopt(easy_, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::max<milliseconds::rep>(connect.count(), 1)));
  if (limit.count() > 0) curl_easy_setopt(easy_, CURLOPT_TIMEOUT_MS, static_cast<long>(limit.count()));

  curl_multi_add_handle(multi_, easy_);
  auto last_data = clock::now();
  std::size_t seen = 0;
  for (bool done = false; !done;) {
    int running = 0;
    if (curl_multi_perform(multi_, &running) != CURLM_OK) {
      r.code = CURLE_RECV_ERROR;
      break;
    }
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
      if (m->msg == CURLMSG_DONE && m->easy_handle == easy_) {
        r.code = m->data.result;
        done = true;
      }
    }
    if (r.received != seen) {
      seen = r.received;
      last_data = clock::now();
      if (on_data && !on_data(r.body)) {
        r.stopped = true;
        break;
      }
    }
    if (done) break;
    if (stopped()) {
      r.stopped = true;
      break;
    }
    auto wait = poll_slice;
    if (idle.count() > 0) {
      const auto quiet = std::chrono::duration_cast<milliseconds>(clock::now() - last_data);
      if (quiet >= idle) {
        r.idle = true;
        break;
      }
      wait = std::min(wait, idle - quiet);
    }
    curl_multi_poll(multi_, nullptr, 0, static_cast<int>(std::max<milliseconds::rep>(wait.count(), 1)), nullptr);
  }
  curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &r.status);
  curl_multi_remove_handle(multi_, easy_);
  curl_slist_free_all(headers);
  if (r.too_big) r.detail = "its answer passed " + std::to_string(max_answer_bytes >> 20) + " MiB";
  else if (error[0] != '\0') r.detail = error.data();
  else if (r.code != CURLE_OK) r.detail = curl_easy_strerror(r.code);
  return r;
}

json client::call(const char* path, const json& body, milliseconds timeout) {
  if (timeout.count() <= 0) timeout = timeout_;
  const std::string text = body.dump();
  const auto deadline = clock::now() + timeout;
  const std::size_t n = urls_.size();
  // Each member gets a share of the time, so that one that accepts
  // connections and never answers (frozen) leaves time for the others.
  const auto share = std::max(timeout / static_cast<milliseconds::rep>(n), milliseconds{500});
  std::vector<std::string> problems(n);
  const auto stopped_during = [path] {
    return net_error(std::string{"troupe::net::registry: stopped during "} + path);
  };
  for (std::size_t round = 0; clock::now() < deadline; ++round) {
    if (round > 0) pause(milliseconds{50});  // every member failed: a pause (stop() ends it)
    for (std::size_t k = 0; k < n; ++k) {
      if (stopped()) throw stopped_during();
      const auto now = clock::now();
      if (now >= deadline) break;
      const std::size_t i = (preferred_ + k) % n;
      const auto limit =
          std::max(std::min(std::chrono::duration_cast<milliseconds>(deadline - now), share), milliseconds{1});
      auto r = perform(urls_[i] + path, text, limit, {}, nullptr);
      if (r.stopped) throw stopped_during();
      if (r.code != CURLE_OK) {
        problems[i] = r.detail;
        continue;
      }
      json answer = json::parse(r.body, nullptr, false);
      if (answer.is_discarded() || !answer.is_object()) {
        problems[i] = "HTTP " + std::to_string(r.status) + ", not etcd's JSON: " + excerpt(r.body);
        continue;
      }
      if (r.status != 200 || answer.contains("error") || answer.contains("code")) {
        const auto code =
            answer.contains("code") && answer["code"].is_number_integer() ? answer["code"].get<int>() : -1;
        std::string message = r.body;
        if (answer.contains("message") && answer["message"].is_string()) message = answer["message"].get<std::string>();
        else if (answer.contains("error") && answer["error"].is_string()) message = answer["error"].get<std::string>();
        // gRPC's UNAVAILABLE (no leader, leader changed, stopping) and
        // DEADLINE_EXCEEDED: another member may answer.
        if (code == 14 || code == 4 || code < 0) {
          problems[i] = "HTTP " + std::to_string(r.status) + ": " + message;
          continue;
        }
        throw refused("troupe::net::registry: etcd at " + urls_[i] + " refused " + path + ": " + message, code);
      }
      preferred_ = i;
      return answer;
    }
  }
  std::string what = std::string{"troupe::net::registry: no etcd member answered "} + path + " within " +
                     std::to_string(timeout.count()) + " ms (";
  bool first = true;
  for (std::size_t i = 0; i < n; ++i) {
    if (!first) what += "; ";
    first = false;
    what += urls_[i] + ": " + (problems[i].empty() ? "not tried in time" : problems[i]);
  }
  throw net_error(what + ")");
}

client::ended client::stream(const char* path, const json& body, milliseconds idle,
                             const std::function<bool(json&)>& on_message, std::string& why) {
  const std::size_t i = preferred_;
  bool bad = false;
  auto r = perform(urls_[i] + path, body.dump(), {}, idle, [&](std::string& buffer) {
    std::size_t from = 0;
    for (auto nl = buffer.find('\n'); nl != std::string::npos; nl = buffer.find('\n', from)) {
      const std::string_view line = std::string_view{buffer}.substr(from, nl - from);
      from = nl + 1;
      if (line.find_first_not_of(" \r\t") == std::string_view::npos) continue;
      json message = json::parse(line, nullptr, false);
      if (message.is_discarded() || !message.is_object()) {
        why = urls_[i] + ": a line of its answer is not etcd's JSON: " + excerpt(line);
        bad = true;
        return false;
      }
      if (!on_message(message)) return false;
    }
    buffer.erase(0, from);
    return true;
  });
  if (bad) {
    preferred_ = (i + 1) % urls_.size();
    return ended::broken;
  }
  if (r.stopped) return ended::stopped;
  if (r.idle) return ended::idle;
  why = urls_[i] + ": " +
        (r.code != CURLE_OK ? r.detail : "the stream ended (HTTP " + std::to_string(r.status) + ") " + excerpt(r.body));
  preferred_ = (i + 1) % urls_.size();  // the next try goes elsewhere first
  return ended::broken;
}

}  // namespace troupe::net::etcd
