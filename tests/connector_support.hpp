// connector_support.hpp: what the connector tests (NATS, Kafka and the
// applications over them) share: a fresh directory per test, numbered
// records, what stopped a graph, a collecting sink, a file's lines.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "troupe/troupe.hpp"

namespace connector_support {

/// A fresh, empty directory `<prefix><name>` under the test's temporary directory.
inline std::filesystem::path fresh_dir(const std::string& prefix, const std::string& name) {
  const auto p = std::filesystem::path{::testing::TempDir()} / (prefix + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

/// prefix<from> .. prefix<to - 1>.
inline std::vector<std::string> numbered(const std::string& prefix, int from, int to) {
  std::vector<std::string> v;
  for (int i = from; i < to; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

/// What stopped g (its wait() rethrows it), "" if nothing did; a graph
/// still running after `limit` says so.
inline std::string failure_of(const troupe::stream::graph& g, std::chrono::seconds limit) {
  try {
    if (!g.wait_for(limit)) return "still running after " + std::to_string(limit.count()) + " s";
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

/// Collects strings (any thread).
struct collected {
  std::mutex m;
  std::vector<std::string> items;
  auto sink() {
    return troupe::stream::sink([this](const std::string& s) {
      std::lock_guard<std::mutex> g{m};
      items.push_back(s);
    });
  }
  std::size_t size() {
    std::lock_guard<std::mutex> g{m};
    return items.size();
  }
  std::vector<std::string> sorted() {
    std::lock_guard<std::mutex> g{m};
    auto v = items;
    std::sort(v.begin(), v.end());
    return v;
  }
};

/// The lines of a file (without their '\n').
inline std::vector<std::string> lines_of(const std::filesystem::path& p) {
  std::vector<std::string> out;
  std::ifstream in{p};
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace connector_support
