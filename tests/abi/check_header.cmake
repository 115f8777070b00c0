# Compile SOURCE, which includes <lockweave.h> alone, with COMPILER and
# FLAGS (one string) against INCLUDE, into OUT: any diagnostic fails.
if(NOT COMPILER)
  message(FATAL_ERROR "compiler not found (${COMPILER}): apt-get install gcc g++ clang-14")
endif()
separate_arguments(flags UNIX_COMMAND "${FLAGS}")
execute_process(
  COMMAND "${COMPILER}" ${flags} "-I${INCLUDE}" -c "${SOURCE}" -o "${OUT}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT "${out}${err}" STREQUAL "")
  message(FATAL_ERROR "${COMPILER} ${FLAGS} failed (${rc}):\n${out}${err}")
endif()
message(STATUS "${COMPILER} ${FLAGS}: <lockweave.h> compiles")
