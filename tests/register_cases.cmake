# Registers one ctest entry per case of a test program (cmake -P, run by the build after the
# program links): asks the program for its cases (--list), so that the entries are exactly the
# cases compiled into this build (#ifdef'd ones included or not), and writes the add_test lines
# that ctest reads (TEST_INCLUDE_FILES). Not a filter of its own: which cases share an entry and
# each entry's cost come from RULES, written by tests/CMakeLists.txt.
#   -DEXE=program -DRULES=file -DOUT=file
cmake_minimum_required(VERSION 3.20)
include(${RULES})
# a main that runs every case whatever its arguments would run them all here, at build time
file(READ ${SOURCE} text)
if(NOT text MATCHES "TEST_RUN_CASES\\(")
  message(FATAL_ERROR "${SOURCE}: its main must end with TEST_RUN_CASES(argc, argv, tests, "
                      "setup, teardown) (tests/support.h), not cmocka_run_group_tests, so that "
                      "each case can be a ctest entry")
endif()
execute_process(COMMAND ${EXE} --list OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --list failed (${rc}): ${err}")
endif()
string(REGEX MATCHALL "[^\n]+" cases "${out}")
if(NOT cases)
  message(FATAL_ERROR "${EXE} --list names no case")
endif()

# entry name -> the cases it runs, in the program's order
set(entries)
foreach(case ${cases})
  if(NOT case MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${EXE} --list printed \"${case}\", not a case name (does its main "
                        "end with TEST_RUN_CASES?)")
  endif()
  string(REGEX REPLACE "^test_" "" entry "${case}")
  # a group (GROUPS: entry=regex over case names) runs its cases in one process
  foreach(g ${GROUPS})
    string(REGEX MATCH "^([^=]+)=(.*)$" _ "${g}")
    set(group "${CMAKE_MATCH_1}")
    if(case MATCHES "${CMAKE_MATCH_2}")
      set(entry "${group}")
      break()
    endif()
  endforeach()
  if(NOT DEFINED cases_of_${entry})
    list(APPEND entries ${entry})
  endif()
  list(APPEND cases_of_${entry} ${case})
endforeach()

set(text "# made by register_cases.cmake from `${EXE} --list`\n")
foreach(entry ${entries})
  set(name "${AREA}.${entry}")
  set(args)
  foreach(case ${cases_of_${entry}})
    string(APPEND args " ${case}")
  endforeach()
  set(props "TIMEOUT 600")
  # COSTS: regex over the entry's name=cost; the first that matches (ctest starts the dearest
  # first until it has timings of its own)
  foreach(c ${COSTS})
    string(REGEX MATCH "^(.*)=([0-9.]+)$" _ "${c}")
    set(cost "${CMAKE_MATCH_2}")
    if(name MATCHES "${CMAKE_MATCH_1}")
      string(APPEND props " COST ${cost}")
      break()
    endif()
  endforeach()
  if(SERIAL)
    string(APPEND props " RUN_SERIAL TRUE")
  endif()
  if(LOCK)
    string(APPEND props " RESOURCE_LOCK ${LOCK}")
  endif()
  if(SKIP_REGEX)
    string(APPEND props " SKIP_REGULAR_EXPRESSION [==[${SKIP_REGEX}]==]")
  endif()
  string(APPEND text "add_test([==[${name}]==] [==[${EXE}]==]${args})\n"
                     "set_tests_properties([==[${name}]==] PROPERTIES ${props}"
                     " WORKING_DIRECTORY [==[${WORKDIR}]==])\n")
endforeach()
file(WRITE ${OUT} "${text}")
