// nats_support.hpp: what the NATS connector tests share: nats_server.hpp
// (a real server, a child process, a libnats client) and a fresh directory
// per test.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "nats_server.hpp"

namespace nats_support {

/// A fresh, empty directory under the test's temporary directory.
inline fs::path fresh_dir(const std::string& name) {
  const auto p = fs::path{::testing::TempDir()} / ("troupe_nats_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

}  // namespace nats_support
