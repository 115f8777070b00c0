# Weave INPUT and compare with GOLDEN (paths replaced by @CASES@ / @OUT@);
# then check a second run is byte-identical and leaves the file untouched,
# and that the woven file compiles (CC, when given).
# LW_UPDATE_GOLDEN=1 in the environment rewrites GOLDEN instead.
# A C++ INPUT (.cpp) is woven to NAME.lw.cpp and compiled with CXX; a line
#   // flags: -std=c++20
# in it gives flags for the parse and the compile.
get_filename_component(name "${INPUT}" NAME_WE)
get_filename_component(ext "${INPUT}" LAST_EXT)
get_filename_component(cases "${INPUT}" DIRECTORY)
include("${CMAKE_CURRENT_LIST_DIR}/input_flags.cmake")
lw_input_flags("${INPUT}" flags)
file(MAKE_DIRECTORY "${OUT_DIR}")
set(out "${OUT_DIR}/${name}.lw${ext}")
file(REMOVE "${out}")
execute_process(COMMAND "${GEN}" "${INPUT}" -o "${out}" -- "-I${INCLUDE}" ${flags}
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "lockweave-gen failed (${rc}):\n${err}")
endif()
file(READ "${out}" text)
string(REPLACE "${cases}" "@CASES@" text "${text}")
string(REPLACE "${OUT_DIR}" "@OUT@" text "${text}")
if("$ENV{LW_UPDATE_GOLDEN}")
  file(WRITE "${GOLDEN}" "${text}")
  message(STATUS "updated ${GOLDEN}")
  return()
endif()
file(READ "${GOLDEN}" want)
if(NOT text STREQUAL want)
  file(WRITE "${out}.normalized" "${text}")
  execute_process(COMMAND diff -u "${GOLDEN}" "${out}.normalized")
  message(FATAL_ERROR "woven output differs from ${GOLDEN} (LW_UPDATE_GOLDEN=1 to accept)")
endif()

# The woven file's own lines (declarations in front of a definition, the
# wrappers) are numbered as what they are: each #line naming the woven file
# gives the number of the line after it, so a message about them shows the
# line it means.
set(rest "${want}")
set(n 0)
while(NOT rest STREQUAL "")
  math(EXPR n "${n} + 1")
  string(FIND "${rest}" "\n" eol)
  if(eol LESS 0)
    set(l "${rest}")
    set(rest "")
  else()
    string(SUBSTRING "${rest}" 0 ${eol} l)
    math(EXPR eol "${eol} + 1")
    string(SUBSTRING "${rest}" ${eol} -1 rest)
  endif()
  if(l MATCHES "^#line ([0-9]+) \"@OUT@/")
    math(EXPR next "${n} + 1")
    if(NOT CMAKE_MATCH_1 EQUAL next)
      message(FATAL_ERROR "${GOLDEN}:${n}: '${l}' names line ${CMAKE_MATCH_1} "
        "of the woven file for its line ${next}")
    endif()
  endif()
endwhile()

# Same input, same output, and an unchanged output is not rewritten.
execute_process(COMMAND touch -d "2001-01-01 00:00:00" "${out}")
file(TIMESTAMP "${out}" before "%s")
execute_process(COMMAND "${GEN}" "${INPUT}" -o "${out}" -- "-I${INCLUDE}" ${flags}
  RESULT_VARIABLE rc)
file(TIMESTAMP "${out}" after "%s")
file(READ "${out}" again)
string(REPLACE "${cases}" "@CASES@" again "${again}")
string(REPLACE "${OUT_DIR}" "@OUT@" again "${again}")
if(NOT rc EQUAL 0 OR NOT again STREQUAL want OR NOT before STREQUAL after)
  message(FATAL_ERROR "second run: rc=${rc}, identical=${again STREQUAL want}, mtime ${before} -> ${after}")
endif()

if(ext STREQUAL ".cpp")
  set(CC "${CXX}")
  set(std ${flags})
  if(NOT flags MATCHES "-std=")
    list(APPEND std -std=c++17)
  endif()
else()
  set(std -std=gnu11)
endif()
if(CC)
  execute_process(COMMAND "${CC}" -fsyntax-only -Wall -Wextra -Werror ${std}
      "-I${INCLUDE}" "${out}"
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the woven file does not compile cleanly:\n${err}")
  endif()
endif()
