// expect: troupe::pipeline: a stage takes another type than the stage before it emits
// expect: pipeline_link<1,
// expect: text_sink
// A stage (text_sink, stage 2) takes std::string where stage 1 emits int.
#include <troupe/troupe.hpp>

#include <optional>
#include <string>

struct text_sink : troupe::stream::node<std::string, void> {
  void consume(std::string&) {}
};

int main() {
  troupe::actor_system sys;
  auto numbers = troupe::stream::source([i = 0]() mutable -> std::optional<int> {
    if (i == 10) return std::nullopt;
    return i++;
  });
  auto g = troupe::spawn_pattern(
      sys, troupe::pipeline{numbers, troupe::stream::map([](int x) { return x * 2; }), text_sink{}});
  g.wait();
}
