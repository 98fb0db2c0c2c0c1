// client.cpp: the connection shared by the NATS connectors.
#include "client.hpp"

#include <algorithm>

namespace troupe::nats::detail {

std::string describe(const std::string& what, natsStatus s, jsErrCode js) {
  std::string out = what + ": " + natsStatus_GetText(s);
  if (js != 0) out += " (JetStream error " + std::to_string(static_cast<int>(js)) + ")";
  natsStatus last = NATS_OK;
  const char* text = nats_GetLastError(&last);
  if (text != nullptr && *text != '\0' && std::string_view{text} != natsStatus_GetText(s))
    out += ": " + std::string{text};
  return out;
}

void check(const std::string& what, natsStatus s, jsErrCode js) {
  if (s != NATS_OK) throw nats_error{describe(what, s, js)};
}

namespace {
struct options_guard {
  natsOptions* o = nullptr;
  ~options_guard() { natsOptions_Destroy(o); }
};
}  // namespace

connection::connection(const connection_config& cfg, std::string who, const jsOptions* js_opts)
    : who_{std::move(who)}, timeout_ms_{std::max<long long>(1, cfg.timeout.count())} {
  options_guard opts;
  const auto step = [&](const std::string& what, natsStatus s) { check(who_ + ": " + what, s); };
  step("natsOptions_Create", natsOptions_Create(&opts.o));
  step("servers '" + cfg.servers + "'", natsOptions_SetURL(opts.o, cfg.servers.c_str()));
  step("name", natsOptions_SetName(opts.o, cfg.name.c_str()));
  step("timeout", natsOptions_SetTimeout(opts.o, timeout_ms_));
  // Reconnect for give_up_after: every 250 ms, buffering what is published meanwhile.
  const auto wait_ms = 250LL;
  const int tries = static_cast<int>(std::max<long long>(1, cfg.give_up_after.count() / wait_ms));
  step("reconnect wait", natsOptions_SetReconnectWait(opts.o, wait_ms));
  step("reconnect tries", natsOptions_SetMaxReconnect(opts.o, tries));
  step("reconnect buffer", natsOptions_SetReconnectBufSize(opts.o, 64 * 1024 * 1024));
  if (!cfg.user.empty() || !cfg.password.empty())
    step("user", natsOptions_SetUserInfo(opts.o, cfg.user.c_str(), cfg.password.c_str()));
  if (!cfg.token.empty()) step("token", natsOptions_SetToken(opts.o, cfg.token.c_str()));
  if (!cfg.credentials.empty())
    step("credentials '" + cfg.credentials + "'",
         natsOptions_SetUserCredentialsFromFiles(opts.o, cfg.credentials.c_str(), nullptr));
  if (!cfg.tls_ca.empty()) {
    step("TLS", natsOptions_SetSecure(opts.o, true));
    step("TLS CA '" + cfg.tls_ca + "'", natsOptions_LoadCATrustedCertificates(opts.o, cfg.tls_ca.c_str()));
  }
  if (!cfg.tls_cert.empty() || !cfg.tls_key.empty())
    step("TLS certificate '" + cfg.tls_cert + "'",
         natsOptions_LoadCertificatesChain(opts.o, cfg.tls_cert.c_str(), cfg.tls_key.c_str()));
  const natsStatus s = natsConnection_Connect(&nc_, opts.o);
  if (s != NATS_OK) throw nats_error{describe(who_ + ": connecting to " + cfg.servers, s)};
  jsOptions o;
  if (js_opts != nullptr) o = *js_opts;
  else jsOptions_Init(&o);
  o.Wait = timeout_ms_;
  const natsStatus j = natsConnection_JetStream(&js_, nc_, &o);
  if (j != NATS_OK) {
    natsConnection_Destroy(nc_);
    throw nats_error{describe(who_ + ": JetStream", j)};
  }
}

connection::~connection() {
  jsCtx_Destroy(js_);
  natsConnection_Destroy(nc_);
}

bool connection::connected() const noexcept { return natsConnection_Status(nc_) == NATS_CONN_STATUS_CONNECTED; }
bool connection::closed() const noexcept { return natsConnection_IsClosed(nc_); }

jsOptions connection::request_options() const {
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = timeout_ms_;
  return o;
}

}  // namespace troupe::nats::detail
