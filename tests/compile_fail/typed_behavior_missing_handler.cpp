// expect: typed_behavior: no handler for this signature of the interface
// expect: no_handler_for<.*reset_atom
// A typed behavior that forgets one signature of its interface.
#include <troupe/troupe.hpp>

struct add_atom {};
struct reset_atom {};
using calculator = troupe::typed_actor<int(add_atom, int, int), void(reset_atom)>;

int main() {
  troupe::actor_system sys;
  calculator c = sys.spawn(
      [](troupe::event_actor&) -> calculator::behavior_type { return {[](add_atom, int a, int b) { return a + b; }}; });
  (void)c;
}
