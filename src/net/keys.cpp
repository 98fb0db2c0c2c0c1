// Key files: `<base>.key` holds "public <key>\nsecret <key>\n" and is created
// with permissions 0600; `<base>.pub` holds the public key alone.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.h>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "troupe/net/node.hpp"

namespace troupe::net {
namespace {

void write_file(const std::string& path, const std::string& text, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) throw net_error("troupe::net: cannot write '" + path + "': " + std::strerror(errno));
  // The mode of an existing file is not changed by open(): set it.
  if (::fchmod(fd, mode) != 0) {
    ::close(fd);
    throw net_error("troupe::net: cannot set the permissions of '" + path + "': " + std::strerror(errno));
  }
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    auto n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw net_error("troupe::net: cannot write '" + path + "': " + std::strerror(errno));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw net_error("troupe::net: cannot write '" + path + "': " + std::strerror(errno));
}

std::string read_file(const std::string& path) {
  std::ifstream in{path};
  if (!in) throw net_error("troupe::net: cannot read '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

bool detail::is_z85_key(const std::string& k) {
  if (k.size() != 40) return false;
  std::uint8_t bin[32];
  return zmq_z85_decode(bin, k.c_str()) != nullptr;
}

void save_key_pair(const key_pair& keys, const std::string& base) {
  if (!detail::is_z85_key(keys.public_key) || !detail::is_z85_key(keys.secret_key))
    throw net_error("troupe::net: save_key_pair: not a CURVE key pair (two Z85 keys of 40 characters)");
  write_file(base + ".key", "public " + keys.public_key + "\nsecret " + keys.secret_key + "\n", 0600);
  write_file(base + ".pub", keys.public_key + "\n", 0644);
}

key_pair load_key_pair(const std::string& key_file) {
  struct stat st{};
  if (::stat(key_file.c_str(), &st) != 0)
    throw net_error("troupe::net: cannot read '" + key_file + "': " + std::strerror(errno));
  if ((st.st_mode & 077) != 0)
    throw net_error("troupe::net: '" + key_file +
                    "' holds a secret key but others may read it: chmod 600 it (or make a new pair)");
  std::istringstream in{read_file(key_file)};
  key_pair k;
  std::string word, value;
  int line = 0;
  while (in >> word >> value) {
    ++line;
    if (word == "public") k.public_key = value;
    else if (word == "secret") k.secret_key = value;
    else
      throw net_error("troupe::net: '" + key_file + "' line " + std::to_string(line) + ": unknown field '" +
                      std::move(word) + "'");
  }
  if (!detail::is_z85_key(k.public_key) || !detail::is_z85_key(k.secret_key))
    throw net_error("troupe::net: '" + key_file + "' does not hold a public and a secret Z85 key of 40 characters");
  return k;
}

key_pair generate_key_pair() {
  char pub[41], sec[41];
  if (zmq_curve_keypair(pub, sec) != 0)
    throw net_error("troupe::net: zmq_curve_keypair failed (ZeroMQ without CURVE support?)");
  return key_pair{pub, sec};
}

std::string load_public_key(const std::string& pub_file) {
  std::istringstream in{read_file(pub_file)};
  std::string k;
  in >> k;
  if (k == "public") in >> k;
  if (!detail::is_z85_key(k))
    throw net_error("troupe::net: '" + pub_file + "' does not start with a Z85 public key (40 characters)");
  return k;
}

}  // namespace troupe::net
