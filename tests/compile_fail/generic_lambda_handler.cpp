// expect: static assertion failed: troupe: a message handler .*needs parameters of concrete types
// expect: generic lambda
// A blocking receive() with a generic lambda: which message would it take?
#include <troupe/troupe.hpp>

int main() {
  troupe::actor_system sys;
  troupe::scoped_actor self{sys};
  self->receive([](auto x) { (void)x; });
}
