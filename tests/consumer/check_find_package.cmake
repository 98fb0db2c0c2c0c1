# tests/consumer/check_find_package.cmake: the packaging.find_package test.
#
#   cmake -DBUILD_DIR=<troupe build dir> -DWORK_DIR=<scratch dir>
#         [-DCONSUMER_DIR=<this folder>] [-DCXX_COMPILER=...] [-DGENERATOR=...]
#         [-DMAKE_PROGRAM=...] [-DBUILD_TYPE=...] [-DEXPECTED_VERSION=...]
#         [-DCONSUMER_EXE=<the consumer's executable, troupe_consumer>]
#         -P check_find_package.cmake
#
# 1. cmake --install BUILD_DIR --prefix WORK_DIR/prefix
# 2. configures and builds tests/consumer against that prefix only
#    (CMAKE_PREFIX_PATH; the user package registry is switched off)
# 3. checks that troupe was found in the prefix, runs the consumer, and
#    checks that it exits 0.
# check_modules.cmake includes this file for the optional modules.
cmake_minimum_required(VERSION 3.25)

foreach(var BUILD_DIR WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_find_package.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT DEFINED CONSUMER_DIR)
  set(CONSUMER_DIR "${CMAKE_CURRENT_LIST_DIR}")
endif()
if(NOT DEFINED CONSUMER_EXE)
  set(CONSUMER_EXE troupe_consumer)
endif()
if(NOT DEFINED BUILD_TYPE OR BUILD_TYPE STREQUAL "")
  set(BUILD_TYPE RelWithDebInfo)
endif()

set(prefix "${WORK_DIR}/prefix")
set(consumer_build "${WORK_DIR}/consumer-build")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run_step what)
  message(STATUS "packaging: ${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "packaging: ${what} failed (${rc})")
  endif()
endfunction()

# 1. install
run_step("install ${BUILD_DIR} -> ${prefix}"
  "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}" --config "${BUILD_TYPE}")
if(NOT EXISTS "${prefix}/include/troupe/troupe.hpp")
  message(FATAL_ERROR "packaging: the install has no include/troupe/troupe.hpp")
endif()
file(GLOB_RECURSE config_files "${prefix}/*/troupeConfig.cmake")
if(NOT config_files)
  message(FATAL_ERROR "packaging: the install has no troupeConfig.cmake")
endif()

# 2. configure + build the consumer against the prefix
set(configure_args
  -S "${CONSUMER_DIR}" -B "${consumer_build}"
  "-DCMAKE_PREFIX_PATH=${prefix}"
  "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}"
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
if(DEFINED GENERATOR AND NOT GENERATOR STREQUAL "")
  list(APPEND configure_args -G "${GENERATOR}")
endif()
if(DEFINED MAKE_PROGRAM AND NOT MAKE_PROGRAM STREQUAL "")
  list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(DEFINED CXX_COMPILER AND NOT CXX_COMPILER STREQUAL "")
  list(APPEND configure_args "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
endif()
if(DEFINED EXPECTED_VERSION AND NOT EXPECTED_VERSION STREQUAL "")
  list(APPEND configure_args "-DTROUPE_EXPECTED_VERSION=${EXPECTED_VERSION}")
endif()
run_step("configure the consumer" "${CMAKE_COMMAND}" ${configure_args})

# troupe must come from the prefix, not from a source or build tree.
file(STRINGS "${consumer_build}/CMakeCache.txt" troupe_dir_line REGEX "^troupe_DIR:")
string(REGEX REPLACE "^troupe_DIR:[A-Z]+=" "" troupe_dir "${troupe_dir_line}")
file(REAL_PATH "${prefix}" real_prefix)
if(troupe_dir STREQUAL "" OR NOT EXISTS "${troupe_dir}")
  message(FATAL_ERROR "packaging: the consumer's troupe_DIR is '${troupe_dir}'")
endif()
file(REAL_PATH "${troupe_dir}" real_troupe_dir)
string(FIND "${real_troupe_dir}" "${real_prefix}/" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "packaging: troupe was found in ${troupe_dir}, not under ${prefix}")
endif()

run_step("build the consumer" "${CMAKE_COMMAND}" --build "${consumer_build}" --config "${BUILD_TYPE}")

# 3. run it
find_program(consumer_exe "${CONSUMER_EXE}" PATHS "${consumer_build}" "${consumer_build}/${BUILD_TYPE}"
             NO_DEFAULT_PATH NO_CACHE)
if(NOT consumer_exe)
  message(FATAL_ERROR "packaging: no ${CONSUMER_EXE} executable in ${consumer_build}")
endif()
execute_process(COMMAND "${consumer_exe}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                TIMEOUT 60)
message(STATUS "packaging: ${CONSUMER_EXE} said: ${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "packaging: ${CONSUMER_EXE} exited with '${rc}'")
endif()
message(STATUS "packaging: OK: ${CONSUMER_EXE} built and ran against the install prefix")
