# Weave diagpos/locked.c, then compile the woven copy and the original
# (its annotations switched off) with gcc (CC) and clang (CLANG): each
# compiler must print exactly the same messages for both, so lines,
# columns, function names ("In function") and echoed source lines are the
# user's.  The file has warnings on a definition's line and in a body.
set(in "${SRC}/locked.c")
file(MAKE_DIRECTORY "${WORK}")
set(out "${WORK}/locked.lw.c")
execute_process(COMMAND "${GEN}" "${in}" -o "${out}" -- "-I${INCLUDE}"
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "lockweave-gen failed:\n${err}")
endif()

set(ENV{LC_ALL} C)
foreach(cc "${CC}" "${CLANG}")
  if(NOT cc)
    continue()
  endif()
  execute_process(COMMAND "${cc}" -c -Wall "-I${INCLUDE}" "${out}" -o "${WORK}/w.o"
    RESULT_VARIABLE rc ERROR_VARIABLE woven)
  execute_process(COMMAND "${cc}" -c -Wall "-I${INCLUDE}" -DLW__MODE=LW__MODE_WOVEN
      "${in}" -o "${WORK}/o.o"
    RESULT_VARIABLE rc2 ERROR_VARIABLE orig)
  message("---- ${cc}, woven copy:\n${woven}---- the original:\n${orig}")
  string(REGEX MATCHALL "warning: unused variable" n "${orig}")
  list(LENGTH n n)
  if(NOT rc EQUAL 0 OR NOT rc2 EQUAL 0 OR NOT n EQUAL 2)
    message(FATAL_ERROR "${cc}: both must compile, with the file's two warnings")
  endif()
  if(NOT woven STREQUAL orig)
    message(FATAL_ERROR "${cc}: the woven copy's messages differ from the original's")
  endif()
endforeach()
