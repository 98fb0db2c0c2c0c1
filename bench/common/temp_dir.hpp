// temp_dir.hpp: a fresh directory for one benchmark run, removed with
// everything in it when it goes (checkpoint directories, say).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace bench {

class temp_dir {
 public:
  /// <$TMPDIR or /tmp>/<prefix>XXXXXX; throws when it cannot be made.
  explicit temp_dir(const std::string& prefix) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = (std::filesystem::path{tmp != nullptr ? tmp : "/tmp"} / (prefix + "XXXXXX")).string();
    if (::mkdtemp(path_.data()) == nullptr) throw std::runtime_error("cannot make a directory like " + path_);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
};

}  // namespace bench
