// layer: util
// assert.hpp: TROUPE_ASSERT(cond, "what must hold"), the check of troupe's
// invariants (the lock-free protocols' numbered rules, the ranges its
// routing and indexing rely on). Active in Debug builds (no NDEBUG) and in
// the sanitizer builds (TROUPE_ENABLE_ASSERTIONS, set by CMake); compiled
// out elsewhere, where it costs nothing. A failed assertion prints the rule,
// the condition and the place, and aborts: it is a bug in troupe (or a
// broken precondition), never a user error to recover from.
#pragma once

#if defined(TROUPE_ENABLE_ASSERTIONS) || !defined(NDEBUG)
#define TROUPE_ASSERTIONS_ON 1
#else
#define TROUPE_ASSERTIONS_ON 0
#endif

namespace troupe::detail {
[[noreturn]] void assertion_failed(const char* what, const char* condition, const char* file, int line) noexcept;
}  // namespace troupe::detail

#if TROUPE_ASSERTIONS_ON
#define TROUPE_ASSERT(cond, what) \
  ((cond) ? static_cast<void>(0) : ::troupe::detail::assertion_failed(what, #cond, __FILE__, __LINE__))
#else
#define TROUPE_ASSERT(cond, what) static_cast<void>(0)
#endif
