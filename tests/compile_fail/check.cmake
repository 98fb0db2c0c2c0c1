# tests/compile_fail/check.cmake: a misuse must not compile, and the compiler
# must say so in one error whose text matches every "// expect: <regex>" line
# of the source (the rule broken, and the stage it names).
#   cmake -DCOMPILER=... -DINCLUDE_DIR=... -DSOURCE=... [-DFLAGS=...] -P check.cmake
foreach(var COMPILER INCLUDE_DIR SOURCE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check.cmake: ${var} is not set")
  endif()
endforeach()
separate_arguments(extra UNIX_COMMAND "${FLAGS}")
execute_process(
  COMMAND "${COMPILER}" -std=c++20 -fsyntax-only ${extra} "-I${INCLUDE_DIR}" "${SOURCE}"
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)
set(all "${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it must not")
endif()
string(REGEX MATCHALL "error:" errors "${all}")
list(LENGTH errors count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "${SOURCE}: expected one error, the compiler gave ${count}:\n${all}")
endif()
file(STRINGS "${SOURCE}" expectations REGEX "^// expect: ")
if(NOT expectations)
  message(FATAL_ERROR "${SOURCE} has no '// expect: ' line")
endif()
foreach(line IN LISTS expectations)
  string(REGEX REPLACE "^// expect: " "" regex "${line}")
  if(NOT all MATCHES "${regex}")
    message(FATAL_ERROR "${SOURCE}: the compiler's message does not match '${regex}':\n${all}")
  endif()
endforeach()
message(STATUS "${SOURCE}: one error, as expected")
