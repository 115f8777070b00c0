# An annotated file compiled and linked without weaving must fail at link
# time with a symbol naming lockweave_generate, at -O0 and at -O2.
file(MAKE_DIRECTORY "${OUT_DIR}")
foreach(opt -O0 -O2)
  execute_process(
    COMMAND "${CC}" ${opt} -std=c11 "-I${INCLUDE}" "${INPUT}" "${RUNTIME}"
            -o "${OUT_DIR}/unwoven${opt}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${CC} ${opt}: exit ${rc}\n${out}${err}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "an unwoven build linked at ${opt}")
  endif()
  if(NOT err MATCHES "lockweave_generate_was_not_run_on_this_file_see_lockweave_generate_in_cmake")
    message(FATAL_ERROR "the ${opt} failure does not name lockweave_generate")
  endif()
endforeach()
