// expect: only a trivially copyable type
// A type that holds a std::string cannot cross as its bytes, even when it
// opts in (troupe::net::raw_bytes).
#include <troupe/net/codec.hpp>

#include <cstdint>
#include <string>

struct labelled {
  std::string label;
};
template <>
struct troupe::net::raw_bytes<labelled> {
  static constexpr std::uint32_t version = 1;
};

int main() {
  troupe::net::add_type<labelled>("labelled");
  troupe::net::add_message<labelled>();
}
