// etcd.hpp: the registry's way to etcd (not installed): its JSON gateway
// (HTTP POST of JSON to /v3/..., keys and values in base64) over libcurl.
//
// Why the gateway and not gRPC: Debian 12 ships gRPC but not etcd's .proto
// files, so a gRPC client would carry copies of etcd's protocol files and
// generate code at build time (protoc, grpc_cpp_plugin), for six calls. The
// gateway is part of every etcd 3.4+ server, needs only libcurl and a JSON
// parser (nlohmann-json, header-only), and is what etcd documents for
// clients without a gRPC library. What it lacks is bidirectional streams:
// a lease keep-alive is one request each (cheap: one every lease_ttl / 3),
// and a watch is one long HTTP response whose lines are its messages.
//
// A client belongs to one thread at a time (a curl easy handle and a multi
// handle, reused so that its connections stay open); stop() is the one call
// another thread may make: it ends the call in progress at once (through
// curl_multi_wakeup) and every later one.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "troupe/net/node.hpp"

using CURL = void;
using CURLM = void;

namespace troupe::net::etcd {

using json = nlohmann::json;

std::string base64_encode(std::string_view bytes);
/// std::nullopt when `text` is not canonical base64.
std::optional<std::string> base64_decode(std::string_view text);

/// etcd answered a call with an error (other than "unavailable, try another
/// member"): its gRPC code (5: not found) and message.
class refused : public net_error {
 public:
  refused(const std::string& what, int code) : net_error{what}, code_{code} {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

/// Throws net_error unless `url` is http(s)://HOST[:PORT] (a trailing '/'
/// allowed); returns it without that '/'.
std::string checked_url(const std::string& url);

class client {
 public:
  /// `urls`: checked ones (checked_url), at least one.
  client(std::vector<std::string> urls, std::chrono::milliseconds timeout);
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// POSTs `body` to `path` ("/v3/kv/range") on the first etcd member that
  /// answers within `timeout` (config's when zero), starting with the one
  /// that answered last. Returns the answer. Throws refused (an error
  /// answer), net_error (nobody answered: each member's problem named;
  /// stopped).
  json call(const char* path, const json& body, std::chrono::milliseconds timeout = {});

  enum class ended {
    stopped,  ///< stop(), or on_message returned false
    idle,     ///< nothing came for `idle`
    broken,   ///< the connection failed or the answer was not a stream of JSON lines (`why` says)
  };
  /// POSTs `body` to `path` on the member that answered last, and hands each
  /// line of the answer, parsed, to `on_message` as it comes.
  ended stream(const char* path, const json& body, std::chrono::milliseconds idle,
               const std::function<bool(json&)>& on_message, std::string& why);

  /// Waits `d`, or less when stop() comes.
  void pause(std::chrono::milliseconds d);

  /// From any thread: ends the call in progress and every later one.
  void stop() noexcept;
  bool stopped() const noexcept { return stop_.load(std::memory_order_acquire); }

 private:
  struct result;
  result perform(const std::string& url, const std::string& body, std::chrono::milliseconds limit,
                 std::chrono::milliseconds idle, const std::function<bool(std::string&)>& on_data);

  std::vector<std::string> urls_;
  std::chrono::milliseconds timeout_;
  std::size_t preferred_ = 0;
  CURL* easy_ = nullptr;
  CURLM* multi_ = nullptr;
  std::atomic<bool> stop_{false};
};

}  // namespace troupe::net::etcd
