// troupe::opencl's errors: opencl_error is a troupe::exception of the
// category "opencl" (and still a std::runtime_error); no device needed.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "troupe/opencl.hpp"
#include "troupe/util/exception.hpp"

namespace ocl = troupe::opencl;
using ocl::opencl_errc;

static_assert(std::is_base_of_v<troupe::exception, ocl::opencl_error>);
static_assert(std::is_base_of_v<std::runtime_error, ocl::opencl_error>);

namespace {
troupe::error as_troupe_exception(const ocl::opencl_error& x) {
  try {
    throw x;
  } catch (const troupe::exception& e) {
    return e.error();
  }
}
}  // namespace

TEST(opencl_errors, opencl_error_carries_a_code_of_the_opencl_category) {
  const ocl::opencl_error none{opencl_errc::no_device, "no OpenCL device of type gpu"};
  auto e = as_troupe_exception(none);
  EXPECT_EQ(e.category(), ocl::opencl_category());
  EXPECT_EQ(e, opencl_errc::no_device);
  EXPECT_EQ(e.code(), troupe::errc::runtime_error);
  EXPECT_EQ(e.to_string(), "opencl.no_device: no OpenCL device of type gpu");
  EXPECT_EQ(none.code(), 0);  // opencl_error::code(): the OpenCL code, as before
  // The kind follows from the OpenCL code and the log when not given.
  EXPECT_EQ(as_troupe_exception(ocl::opencl_error{"build", CL_BUILD_PROGRAM_FAILURE, "log"}),
            opencl_errc::build_failed);
  EXPECT_EQ(as_troupe_exception(ocl::opencl_error{"enqueue", CL_INVALID_WORK_GROUP_SIZE}), opencl_errc::call_failed);
  EXPECT_EQ(as_troupe_exception(ocl::opencl_error{"bad nd_range"}), opencl_errc::invalid_argument);
  // Caught as before.
  EXPECT_THROW(throw ocl::opencl_error{"x"}, std::runtime_error);
  EXPECT_THROW(throw ocl::opencl_error{"x"}, std::exception);
}

TEST(opencl_errors, a_missing_device_is_no_device) {
  try {
    (void)ocl::find_device("no such device name");
    FAIL() << "no exception";
  } catch (const troupe::exception& e) {
    EXPECT_EQ(e.error(), opencl_errc::no_device) << e.error().to_string();
  }
}
