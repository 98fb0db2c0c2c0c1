// troupe-members: lists the members of a troupe cluster registered in etcd
// (troupe::membership), and with --watch prints their changes as they come.
//   troupe-members --etcd http://127.0.0.1:2379 --cluster shop
//   troupe-members --etcd http://10.0.0.2:2379,http://10.0.0.3:2379 --cluster shop --watch
// One line per member: NAME ENDPOINT INCARNATION PUBLIC_KEY ATTRIBUTES ('-'
// where empty). Exit status 0; 2 for a bad flag or when etcd cannot be read
// (the message says which); --watch ends with SIGINT or SIGTERM (status 0).
#include <pthread.h>

#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <troupe/net/membership.hpp>
#include <vector>

namespace net = troupe::net;

namespace {

const char* const usage =
    "usage: troupe-members --etcd URL[,URL...] [--cluster NAME] [--prefix PREFIX] [--timeout MS] [--watch]\n"
    "  lists the members of a troupe cluster registered in etcd, one per line:\n"
    "    NAME ENDPOINT INCARNATION PUBLIC_KEY ATTRIBUTES   ('-' where empty)\n"
    "  --etcd URL,...   the client URLs of the etcd members (http://HOST:PORT)\n"
    "  --cluster NAME   the cluster (default troupe)\n"
    "  --prefix PREFIX  where in etcd's keys (default /troupe)\n"
    "  --timeout MS     the bound of each call to etcd (default 5000)\n"
    "  --watch          then prints each change ('joined', 'left', 'updated' and the member)\n"
    "                   until interrupted (SIGINT, SIGTERM)\n"
    "exit status: 0 done; 2 a bad flag, or etcd could not be read (the message says which)\n";

std::string line_of(const net::member& m) {
  char inc[20];
  std::snprintf(inc, sizeof inc, "%016llx", static_cast<unsigned long long>(m.incarnation));
  std::string attrs;
  for (const auto& [k, v] : m.attributes) {
    if (!attrs.empty()) attrs += ',';
    attrs += k;
    attrs += '=';
    attrs += v;
  }
  return m.name + " " + m.address.endpoint + " " + inc + " " +
         (m.address.public_key.empty() ? "-" : m.address.public_key) + " " + (attrs.empty() ? "-" : attrs);
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    const auto comma = s.find(',', from);
    out.push_back(s.substr(from, comma - from));
    if (comma == std::string::npos) return out;
    from = comma + 1;
  }
}

int bad(const std::string& why) {
  std::fprintf(stderr, "troupe-members: %s (try --help)\n", why.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  net::registry_config cfg;
  bool watch = false, have_etcd = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (flag == "--watch") {
      watch = true;
      continue;
    }
    if (flag != "--etcd" && flag != "--cluster" && flag != "--prefix" && flag != "--timeout")
      return bad("unknown flag '" + flag + "'");
    if (i + 1 >= argc) return bad(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--etcd") {
      cfg.etcd = split_list(value);
      have_etcd = true;
    } else if (flag == "--cluster") {
      cfg.cluster = value;
    } else if (flag == "--prefix") {
      cfg.prefix = value;
    } else {
      long ms = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
      if (ec != std::errc{} || p != value.data() + value.size() || ms <= 0)
        return bad("--timeout '" + value + "' is not a positive number of milliseconds");
      cfg.timeout = std::chrono::milliseconds{ms};
    }
  }
  if (!have_etcd) return bad("--etcd is missing: give the client URLs of the etcd members");

  // The watch's thread must not take the signals: this thread waits for them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::mutex out_mtx;
  cfg.log = [&out_mtx](const std::string& line) {
    std::lock_guard<std::mutex> g{out_mtx};
    std::fprintf(stderr, "troupe-members: %s\n", line.c_str());
  };
  try {
    net::registry reg{cfg};
    const auto all = reg.members();  // etcd unreachable: net_error, here, before any watch
    if (!watch) {
      for (const auto& m : all) std::printf("%s\n", line_of(m).c_str());
      if (all.empty()) std::fprintf(stderr, "troupe-members: cluster '%s' has no members\n", cfg.cluster.c_str());
      return 0;
    }
    auto sub = reg.watch([&out_mtx](const net::member_event& e) {
      std::lock_guard<std::mutex> g{out_mtx};
      std::printf("%s %s\n", net::to_string(e.change), line_of(e.who).c_str());
      std::fflush(stdout);
    });
    int sig = 0;
    sigwait(&stop_signals, &sig);
    sub.cancel();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "troupe-members: %s\n", e.what());
    return 2;
  }
}
