// expect: cannot cross the network
// expect: raw_bytes
// A trivially copyable struct that lists no fields, has no cereal
// serialize() and did not opt in to cross as its bytes (troupe::net::raw_bytes):
// its memory (padding included) no longer crosses silently.
#include <troupe/net/codec.hpp>

#include <cstdint>

struct sample {
  std::uint8_t kind;
  std::uint64_t value;
};

int main() {
  troupe::net::add_type<sample>("sample");
  troupe::net::add_message<sample>();
}
