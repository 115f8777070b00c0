# Weave INPUT (which must succeed), compile the woven file (which must fail),
# and check each "// expect: LINE: WORD" of INPUT: the compiler reports an
# error at INPUT:LINE that names WORD.  The #line around user expressions is
# what makes that so.
get_filename_component(name "${INPUT}" NAME_WE)
file(MAKE_DIRECTORY "${OUT_DIR}")
set(out "${OUT_DIR}/${name}.lw.c")
execute_process(COMMAND "${GEN}" "${INPUT}" -o "${out}" -- "-I${INCLUDE}"
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "lockweave-gen failed (${rc}):\n${err}")
endif()
execute_process(COMMAND "${CC}" -fsyntax-only -std=gnu11 "-I${INCLUDE}"
    "${out}"
  RESULT_VARIABLE rc ERROR_VARIABLE err)
message("${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "the woven file compiled; errors were expected")
endif()
file(STRINGS "${INPUT}" lines REGEX "// expect: ")
foreach(l IN LISTS lines)
  string(REGEX REPLACE ".*// expect: ([0-9]+): (.*)" "\\1;\\2" e "${l}")
  list(GET e 0 line)
  list(GET e 1 word)
  string(REGEX MATCH "${INPUT}:${line}:[0-9]+: error: [^\n]*${word}" hit "${err}")
  if(NOT hit)
    message(FATAL_ERROR "no error at ${INPUT}:${line} naming ${word}")
  endif()
endforeach()
