# tests/consumer/check_modules.cmake: the packaging.find_package_modules test.
#
#   cmake -DBUILD_DIR=<troupe build dir> -DWORK_DIR=<scratch dir>
#         -DMODULES_BUILT=<the optional modules this build made: net,opencl,metrics>
#         [the other options of check_find_package.cmake]
#         -P check_modules.cmake
#
# With every optional module built:
# 1. check_find_package.cmake with the consumer in modules/: install, then
#    find_package(troupe REQUIRED COMPONENTS net opencl metrics), build,
#    run (a key pair, the OpenCL devices, the metrics exporter's helpers);
# 2. no private compile definition of a module (cpp-httplib's) is exported;
# 3. small probe projects check the package's answers: OPTIONAL_COMPONENTS
#    that are missing leave the package found; a REQUIRED component whose
#    dependency is missing, or that does not exist, fails with a message
#    that names it and the Debian packages to install.
# With a module not built (TROUPE_NET, TROUPE_OPENCL or TROUPE_METRICS off),
# it installs, checks that asking for that component fails with a message
# that says so, and reports the test as skipped ("packaging: SKIPPED").
cmake_minimum_required(VERSION 3.25)

set(_all_modules net opencl metrics)
string(REPLACE "," ";" MODULES_BUILT "${MODULES_BUILT}")
set(_missing "")
foreach(m IN LISTS _all_modules)
  if(NOT m IN_LIST MODULES_BUILT)
    list(APPEND _missing ${m})
  endif()
endforeach()
set(_debian_net "libzmq3-dev")
set(_debian_opencl "opencl-headers")
set(_debian_metrics "libcpp-httplib-dev")

# probe(<name> <expect: ok|fail> <regex the output must match> <find_package arguments...>)
# configures a project that calls find_package(troupe <arguments>) against
# the prefix; `PROBE_ENV` (a list of VAR=value) and `PROBE_DEFINES` (-D...)
# apply to that one configure.
function(probe name expect regex)
  set(dir "${WORK_DIR}/probe-${name}")
  list(JOIN ARGN " " words)
  file(MAKE_DIRECTORY "${dir}/src")
  file(WRITE "${dir}/src/CMakeLists.txt" [=[
cmake_minimum_required(VERSION 3.25)
project(troupe_probe LANGUAGES CXX)
separate_arguments(args UNIX_COMMAND "${PROBE_ARGS}")
find_package(troupe ${args})
foreach(c net opencl metrics)
  if(TARGET troupe::${c})
    message(STATUS "probe: ${c}: found=${troupe_${c}_FOUND} target")
  else()
    message(STATUS "probe: ${c}: found=${troupe_${c}_FOUND} no-target")
  endif()
endforeach()
if(troupe_FOUND)
  message(STATUS "probe: troupe found")
endif()
]=])
  set(args -S "${dir}/src" -B "${dir}/build" "-DCMAKE_PREFIX_PATH=${prefix}"
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
      "-DPROBE_ARGS=${words}" ${PROBE_DEFINES})
  if(DEFINED GENERATOR AND NOT GENERATOR STREQUAL "")
    list(APPEND args -G "${GENERATOR}")
  endif()
  if(DEFINED MAKE_PROGRAM AND NOT MAKE_PROGRAM STREQUAL "")
    list(APPEND args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
  endif()
  if(DEFINED CXX_COMPILER AND NOT CXX_COMPILER STREQUAL "")
    list(APPEND args "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env ${PROBE_ENV} "${CMAKE_COMMAND}" ${args}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  # CMake wraps long messages: compare with the whitespace folded.
  set(raw "${out}${err}")
  string(REGEX REPLACE "[ \t\r\n]+" " " said "${raw}")
  if(expect STREQUAL "ok" AND NOT rc EQUAL 0)
    message(FATAL_ERROR "packaging: probe '${name}' (find_package(troupe ${words})) failed:\n${raw}")
  elseif(expect STREQUAL "fail" AND rc EQUAL 0)
    message(FATAL_ERROR "packaging: probe '${name}' (find_package(troupe ${words})) should have failed:\n${raw}")
  endif()
  if(NOT said MATCHES "${regex}")
    message(FATAL_ERROR "packaging: probe '${name}' (find_package(troupe ${words})): the output does not match '${regex}':\n${raw}")
  endif()
  message(STATUS "packaging: probe '${name}': ok")
endfunction()

if(_missing)
  # Only the install, and the answer to a component that is not there.
  set(prefix "${WORK_DIR}/prefix")
  file(REMOVE_RECURSE "${WORK_DIR}")
  file(MAKE_DIRECTORY "${WORK_DIR}")
  if(NOT DEFINED BUILD_TYPE OR BUILD_TYPE STREQUAL "")
    set(BUILD_TYPE RelWithDebInfo)
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}" --config "${BUILD_TYPE}"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "packaging: install ${BUILD_DIR} -> ${prefix} failed (${rc})")
  endif()
  foreach(m IN LISTS _missing)
    if(EXISTS "${prefix}/include/troupe/${m}.hpp")
      message(FATAL_ERROR "packaging: troupe::${m} is not built, but include/troupe/${m}.hpp was installed")
    endif()
    probe(not-built-${m} fail "component ${m}: troupe::${m} was not built.*${_debian_${m}}" REQUIRED COMPONENTS ${m})
  endforeach()
  list(JOIN _missing ", " _missing)
  message(STATUS "packaging: SKIPPED: not built here: ${_missing} (TROUPE_NET, TROUPE_OPENCL, TROUPE_METRICS)")
  return()
endif()

# 1. install, build and run the consumer of the three modules.
set(CONSUMER_DIR "${CMAKE_CURRENT_LIST_DIR}/modules")
set(CONSUMER_EXE troupe_modules_consumer)
include("${CMAKE_CURRENT_LIST_DIR}/check_find_package.cmake")

# 2. cpp-httplib's definitions (CPPHTTPLIB_*) are troupe_metrics' own.
file(GLOB_RECURSE _target_files "${prefix}/*.cmake")
foreach(f IN LISTS _target_files)
  file(READ "${f}" text)
  if(text MATCHES "CPPHTTPLIB")
    message(FATAL_ERROR "packaging: ${f} passes cpp-httplib's definitions on to users")
  endif()
endforeach()
foreach(m IN LISTS _all_modules)
  if(NOT "${_target_files}" MATCHES "troupe_${m}_targets\\.cmake")
    message(FATAL_ERROR "packaging: the install has no troupe_${m}_targets.cmake")
  endif()
endforeach()

# 3. the package's answers.
probe(core ok "probe: net: found= no-target.*probe: troupe found" REQUIRED)
set(PROBE_DEFINES -DCMAKE_DISABLE_FIND_PACKAGE_OpenCL=ON)
probe(optional-missing ok
      "probe: net: found=TRUE target.*probe: opencl: found=FALSE no-target.*probe: metrics: found=TRUE target.*probe: troupe found"
      REQUIRED COMPONENTS net OPTIONAL_COMPONENTS opencl metrics)
probe(required-missing-opencl fail "component opencl: troupe::opencl needs OpenCL.*apt install opencl-headers"
      REQUIRED COMPONENTS net opencl metrics)
set(PROBE_DEFINES "")
# No pkg-config modules: ZeroMQ and cpp-httplib are not found.
file(MAKE_DIRECTORY "${WORK_DIR}/no-pkgconfig")
set(PROBE_ENV "PKG_CONFIG_LIBDIR=${WORK_DIR}/no-pkgconfig" "PKG_CONFIG_PATH=${WORK_DIR}/no-pkgconfig")
probe(required-missing-pkgconfig fail
      "component net: troupe::net needs ZeroMQ.*apt install libzmq3-dev.*component metrics: troupe::metrics needs cpp-httplib.*apt install libcpp-httplib-dev"
      REQUIRED COMPONENTS net metrics)
set(PROBE_ENV "")
probe(unknown fail "troupe has no component 'bogus'" REQUIRED COMPONENTS bogus)
message(STATUS "packaging: OK: find_package(troupe COMPONENTS net opencl metrics) works from an install prefix")
