// One failure semantics for every stage: a stage that throws either cancels
// its graph (the default) or, with failure::skip, has that element dropped,
// counted and reported while the rest goes on. Requests of a pattern used
// from actors get the failed item's error either way.
#include <troupe/troupe.hpp>

#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>

namespace st = troupe::stream;

int main() {
  troupe::actor_system sys;
  // [failures]
  auto parse = troupe::seq{[](const std::string& s) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument{"not a number: '" + s + "'"};
    return std::stoi(s);
  }};

  // skip: a bad element is dropped and reported; the graph goes on.
  troupe::scoped_actor self{sys};
  int sum = 0;
  auto g = troupe::spawn_pattern(sys, troupe::pipeline{troupe::farm{parse, 2}, st::sink([&](int x) { sum += x; })},
                                 {.on_error = st::failure::skip, .errors_to = self.handle()});
  for (const char* s : {"1", "2", "x3", "4"}) self->send(g, std::string{s});
  std::string reported;
  self->receive([&](st::element_failed& f) { reported = f.node + ": " + f.error.message(); });
  g.close();
  g.wait();  // sum == 7, g.failed() == 1

  // cancel (the default): the first failure stops the graph, and the
  // requester of the failed item gets the error.
  auto p = troupe::spawn_pattern(sys, parse);
  troupe::error answer;
  self->request(p, std::chrono::seconds{5}, std::string{"x"})
      .receive([](int) {}, [&](troupe::error& e) { answer = e; });  // errc::unhandled_exception
  // [/failures]

  std::printf("sum %d, dropped %llu (%s); the request got: %s\n", sum, static_cast<unsigned long long>(g.failed()),
              reported.c_str(), answer.to_string().c_str());
  return sum == 7 && g.failed() == 1 && answer.code() == troupe::errc::unhandled_exception ? 0 : 1;
}
