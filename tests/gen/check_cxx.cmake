# Configure cxx/ with the compiler CXX (NO_EXCEPTIONS: -fno-exceptions) in
# WORK, build it through lockweave_generate(), and run it under WITH_REDIS;
# with SANITIZE (the runtime's sanitizers) instrumented as the runtime is.
file(REMOVE_RECURSE "${WORK}")
set(flags "")
if(SANITIZE)
  set(f "-fsanitize=${SANITIZE}")
  set(flags "-DCMAKE_C_FLAGS=${f}" "-DCMAKE_CXX_FLAGS=${f}" "-DCMAKE_EXE_LINKER_FLAGS=${f}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SRC}" -B "${WORK}" -G Ninja ${flags}
    -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_COMPILER=${CC}" "-DCMAKE_CXX_COMPILER=${CXX}"
    "-DLW_GEN=${GEN}" "-DLW_RUNTIME=${RUNTIME}" "-DLW_INCLUDE=${INCLUDE}"
    "-DLW_CMAKE=${LW_CMAKE}" "-DNO_EXCEPTIONS=${NO_EXCEPTIONS}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure failed:\n${out}${err}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "build failed:\n${out}${err}")
endif()
execute_process(COMMAND "${WITH_REDIS}" "${WORK}/cxx_run"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cxx_run failed (${rc})")
endif()
