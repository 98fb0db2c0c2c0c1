// troupe-keygen: makes a CURVE key pair for a troupe::net node.
//   troupe-keygen keys/alpha      writes keys/alpha.key (0600) and keys/alpha.pub
#include <cstdio>
#include <cstring>
#include <string>

#include <troupe/net/node.hpp>

int main(int argc, char** argv) {
  if (argc != 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fprintf(argc == 2 ? stdout : stderr,
                 "usage: troupe-keygen BASE\n"
                 "  writes BASE.key (public and secret key, owner-only permissions 0600)\n"
                 "  and BASE.pub (the public key, to give to the nodes that should trust this one)\n");
    return argc == 2 ? 0 : 2;
  }
  try {
    auto keys = troupe::net::generate_key_pair();
    troupe::net::save_key_pair(keys, argv[1]);
    std::printf("%s.key  (secret: keep it)\n%s.pub  public key %s\n", argv[1], argv[1], keys.public_key.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "troupe-keygen: %s\n", e.what());
    return 1;
  }
}
