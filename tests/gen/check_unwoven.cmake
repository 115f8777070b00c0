# An annotated file compiled and linked without weaving must fail at link
# time, at -O0 and at -O2, with symbols that say what to do with CMake
# (lockweave_generate) and without (lockweave-gen --launch).  So must a file
# that only includes a header with an annotated declaration (declared.c),
# and one with REDIS_ONCE (once.c).
file(MAKE_DIRECTORY "${OUT_DIR}")
get_filename_component(dir "${INPUT}" DIRECTORY)
foreach(input "${INPUT}" "${dir}/declared.c" "${dir}/once.c")
  get_filename_component(name "${input}" NAME_WE)
  foreach(opt -O0 -O2)
    execute_process(
      COMMAND "${CC}" ${opt} -std=c11 "-I${INCLUDE}" "${input}" "${RUNTIME}"
              -o "${OUT_DIR}/${name}${opt}"
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    message("${CC} ${opt} ${name}.c: exit ${rc}\n${out}${err}")
    if(rc EQUAL 0)
      message(FATAL_ERROR "an unwoven build of ${name}.c linked at ${opt}")
    endif()
    foreach(symbol
        lockweave_generate_was_not_run_on_this_file_see_lockweave_generate_in_cmake
        or_without_cmake_compile_it_with_lockweave_gen_launch_see_lockweave_h)
      if(NOT err MATCHES "${symbol}")
        message(FATAL_ERROR "the ${opt} failure of ${name}.c does not name ${symbol}")
      endif()
    endforeach()
  endforeach()
endforeach()
