// expect: deleted
// expect: not in the typed actor.s interface
// expect: basic_string
// A message the typed actor's interface does not list.
#include <string>
#include <troupe/troupe.hpp>

struct add_atom {};
using calculator = troupe::typed_actor<int(add_atom, int, int)>;

int main() {
  troupe::actor_system sys;
  calculator c = sys.spawn(
      [](troupe::event_actor&) -> calculator::behavior_type { return {[](add_atom, int a, int b) { return a + b; }}; });
  troupe::scoped_actor self{sys};
  self->send(c, std::string{"hello"});
}
