// error.hpp: the error value that travels between actors (exit reasons,
// failed requests, unexpected messages). It lives in the lowest layer,
// util/error.hpp, so that every layer reports the same error; this header
// is where actor code finds it.
#pragma once

#include "troupe/util/error.hpp"
