# Weave INPUT and compare with GOLDEN (paths replaced by @CASES@ / @OUT@);
# then check a second run is byte-identical and leaves the file untouched,
# and that the woven file compiles (CC, when given).
# LW_UPDATE_GOLDEN=1 in the environment rewrites GOLDEN instead.
get_filename_component(name "${INPUT}" NAME_WE)
get_filename_component(cases "${INPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${OUT_DIR}")
set(out "${OUT_DIR}/${name}.lw.c")
file(REMOVE "${out}")
execute_process(COMMAND "${GEN}" "${INPUT}" -o "${out}" -- "-I${INCLUDE}"
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

# Same input, same output, and an unchanged output is not rewritten.
execute_process(COMMAND touch -d "2001-01-01 00:00:00" "${out}")
file(TIMESTAMP "${out}" before "%s")
execute_process(COMMAND "${GEN}" "${INPUT}" -o "${out}" -- "-I${INCLUDE}" RESULT_VARIABLE rc)
file(TIMESTAMP "${out}" after "%s")
file(READ "${out}" again)
string(REPLACE "${cases}" "@CASES@" again "${again}")
string(REPLACE "${OUT_DIR}" "@OUT@" again "${again}")
if(NOT rc EQUAL 0 OR NOT again STREQUAL want OR NOT before STREQUAL after)
  message(FATAL_ERROR "second run: rc=${rc}, identical=${again STREQUAL want}, mtime ${before} -> ${after}")
endif()

if(CC)
  execute_process(COMMAND "${CC}" -fsyntax-only -Wall -Wextra -Werror -std=gnu11
      "-I${INCLUDE}" "${out}"
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the woven file does not compile cleanly:\n${err}")
  endif()
endif()
