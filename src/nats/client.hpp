// client.hpp (src): the libnats side shared by the NATS connectors: a
// connection with its JetStream context, and errors in words.
#pragma once

#include <nats/nats.h>

#include <memory>
#include <string>

#include "troupe/nats/client.hpp"

namespace troupe::nats::detail {

/// "<what>: <libnats' text for s>[ (JetStream error <code>)][: <last error>]".
std::string describe(const std::string& what, natsStatus s, jsErrCode js = static_cast<jsErrCode>(0));
/// Throws nats_error(describe(...)) unless s is NATS_OK.
void check(const std::string& what, natsStatus s, jsErrCode js = static_cast<jsErrCode>(0));

/// A connection to the servers and its JetStream context; reconnects on its
/// own (libnats) until give_up_after.
class connection {
 public:
  /// `who` names the connector in errors ("nats source 'S/D'").
  connection(const connection_config& cfg, std::string who, const jsOptions* js_opts = nullptr);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  natsConnection* nc() const noexcept { return nc_; }
  jsCtx* js() const noexcept { return js_; }
  const std::string& who() const noexcept { return who_; }
  /// Connected now (not reconnecting, not closed).
  bool connected() const noexcept;
  /// Closed for good (reconnecting gave up).
  bool closed() const noexcept;
  /// Options for a JetStream request: the configured timeout.
  jsOptions request_options() const;

 private:
  std::string who_;
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  long long timeout_ms_;
};

}  // namespace troupe::nats::detail
