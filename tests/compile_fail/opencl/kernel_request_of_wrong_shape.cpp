// expect: deleted
// expect: not in the typed actor.s interface
// expect: vector<int
// A request to a kernel actor whose types the kernel's argument tags do not
// give: in<float>, in<float> take two std::vector<float>.
#include <troupe/opencl/opencl.hpp>
#include <troupe/troupe.hpp>

namespace ocl = troupe::opencl;

int main() {
  troupe::actor_system sys;
  auto prog = ocl::program::build(ocl::default_device(), "");
  auto vadd = ocl::spawn(sys, prog, "vadd", ocl::nd_range{{4}}, ocl::in<float>{}, ocl::in<float>{}, ocl::out<float>{});
  troupe::scoped_actor self{sys};
  self->send(vadd, std::vector<float>{1, 2, 3, 4}, std::vector<int>{1, 2, 3, 4});
}
