// expect: troupe::chain: a node's output type must be the next node's input type
// A chained node (text_sink) takes std::string where the node before it emits int.
#include <troupe/troupe.hpp>

#include <string>

struct text_sink : troupe::stream::node<std::string, void> {
  void consume(std::string&) {}
};

int main() {
  troupe::chain c{troupe::stream::map([](int x) { return x * 2; }), text_sink{}};
  (void)c;
}
