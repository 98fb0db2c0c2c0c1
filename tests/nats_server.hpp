// nats_server.hpp: a real nats-server with JetStream started on a free
// loopback port (and killed, and started again on the same port and store),
// and a small libnats client to make streams, publish and
// read a stream back. For the NATS connector tests and benchmarks (no
// GoogleTest here).
#pragma once

#include <nats/nats.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child_process.hpp"

namespace nats_support {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using child_process::process;
using child_process::slurp;

/// nats-server with JetStream, its store under `dir`, on 127.0.0.1.
class server {
 public:
  static constexpr const char* binary = "/usr/sbin/nats-server";
  static bool installed() { return ::access(binary, X_OK) == 0; }

  explicit server(fs::path dir) : dir_{std::move(dir)} { start(); }
  ~server() { stop(); }
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  /// Starts it (again: on the same port and store).
  void start() {
    const auto ports = dir_ / "ports";
    fs::remove_all(ports);
    fs::create_directories(ports);
    proc_ = std::make_unique<process>(
        std::vector<std::string>{binary, "-js", "-sd", (dir_ / "store").string(), "-a", "127.0.0.1", "-p",
                                 port_ == 0 ? std::string{"-1"} : std::to_string(port_), "--ports_file_dir",
                                 ports.string()},
        dir_ / "server.out", dir_ / "server.err");
    for (int i = 0; i < 1000; ++i) {  // 10 s
      for (const auto& e : fs::directory_iterator{ports}) {
        const auto text = slurp(e.path());
        const auto at = text.find("nats://127.0.0.1:");
        const auto end = text.find('"', at);
        if (at == std::string::npos || end == std::string::npos) continue;
        url_ = text.substr(at, end - at);
        port_ = std::stoi(url_.substr(url_.rfind(':') + 1));
        if (ready()) return;
      }
      std::this_thread::sleep_for(10ms);
    }
    throw std::runtime_error{"nats-server did not start within 10 s: " + slurp(dir_ / "server.err")};
  }
  void kill() { proc_.reset(); }  // SIGKILL
  void stop() {
    if (proc_) proc_->kill(SIGTERM);
    proc_.reset();
  }
  const std::string& url() const { return url_; }

 private:
  bool ready() const {
    natsConnection* nc = nullptr;
    natsOptions* o = nullptr;
    natsOptions_Create(&o);
    natsOptions_SetURL(o, url_.c_str());
    natsOptions_SetTimeout(o, 500);
    const bool ok = natsConnection_Connect(&nc, o) == NATS_OK;
    natsConnection_Destroy(nc);
    natsOptions_Destroy(o);
    return ok;
  }

  fs::path dir_;
  std::unique_ptr<process> proc_;
  int port_ = 0;
  std::string url_;
};

/// A plain libnats client for the tests' own set-up and checks.
class client {
 public:
  explicit client(const std::string& url) {
    natsOptions* o = nullptr;
    natsOptions_Create(&o);
    natsOptions_SetURL(o, url.c_str());
    natsOptions_SetMaxReconnect(o, 200);
    natsOptions_SetReconnectWait(o, 50);
    const natsStatus s = natsConnection_Connect(&nc_, o);
    natsOptions_Destroy(o);
    if (s != NATS_OK) throw std::runtime_error{std::string{"test client: "} + natsStatus_GetText(s)};
    if (natsConnection_JetStream(&js_, nc_, nullptr) != NATS_OK) throw std::runtime_error{"test client: JetStream"};
  }
  ~client() {
    jsCtx_Destroy(js_);
    natsConnection_Destroy(nc_);
  }
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// A file-stored stream of `subjects` with a duplicate window of 2 minutes.
  void make_stream(const std::string& name, const std::string& subject) {
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = name.c_str();
    const char* subjects[] = {subject.c_str()};
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = js_AddStream(&si, js_, &sc, nullptr, &jerr);
    jsStreamInfo_Destroy(si);
    if (s != NATS_OK) throw std::runtime_error{"make_stream " + name + ": " + natsStatus_GetText(s)};
  }
  /// Publishes each of `data` to `subject` and waits for the acknowledgements.
  void publish(const std::string& subject, const std::vector<std::string>& data) {
    for (const auto& d : data)
      if (js_PublishAsync(js_, subject.c_str(), d.data(), static_cast<int>(d.size()), nullptr) != NATS_OK)
        throw std::runtime_error{"publish to " + subject};
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 20000;
    if (js_PublishAsyncComplete(js_, &po) != NATS_OK) throw std::runtime_error{"publish: no acknowledgements"};
  }
  /// Every message of `stream`, in order, one by one (js_GetMsg: libnats
  /// 3.4.1's natsSubscription_Fetch can write past its array).
  std::vector<std::string> read_all(const std::string& stream) {
    std::vector<std::string> out;
    jsStreamInfo* si = nullptr;
    if (js_GetStreamInfo(&si, js_, stream.c_str(), nullptr, nullptr) != NATS_OK)
      throw std::runtime_error{"read_all: no stream " + stream};
    const std::uint64_t first = si->State.FirstSeq, last = si->State.LastSeq, n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    for (std::uint64_t seq = first; n != 0 && seq <= last; ++seq) {
      natsMsg* m = nullptr;
      if (js_GetMsg(&m, js_, stream.c_str(), seq, nullptr, nullptr) != NATS_OK) continue;  // deleted
      out.emplace_back(natsMsg_GetData(m), static_cast<std::size_t>(natsMsg_GetDataLength(m)));
      natsMsg_Destroy(m);
    }
    return out;
  }
  /// Deletes a consumer of `stream` (as an operator would).
  void delete_consumer(const std::string& stream, const std::string& name) {
    if (js_DeleteConsumer(js_, stream.c_str(), name.c_str(), nullptr, nullptr) != NATS_OK)
      throw std::runtime_error{"delete_consumer " + stream + "/" + name};
  }
  /// How many messages `stream` holds.
  std::uint64_t count(const std::string& stream) {
    jsStreamInfo* si = nullptr;
    if (js_GetStreamInfo(&si, js_, stream.c_str(), nullptr, nullptr) != NATS_OK) return 0;
    const auto n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
  }

 private:
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
};

}  // namespace nats_support
