# One case of the build-variation suite (safety/).
#   -DSTEP=configure            configure the project in WORK (Release)
#   -DSTEP=run -DCASE=x         build target x, run it under lw_with_redis:
#                               it must report its body ran locked
#   -DSTEP=fail -DCASE=x -DEXPECT=regex
#                               building target x must fail, saying EXPECT
set(B "${WORK}/build")
if(STEP STREQUAL "configure")
  file(REMOVE_RECURSE "${WORK}")
  set(flags "")
  if(SANITIZE)
    set(f "-fsanitize=${SANITIZE}")
    set(flags "-DCMAKE_C_FLAGS=${f}" "-DCMAKE_CXX_FLAGS=${f}" "-DCMAKE_EXE_LINKER_FLAGS=${f}")
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SRC}" -B "${B}" -G "${GENERATOR}" ${flags}
      -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_COMPILER=${CC}" "-DCMAKE_CXX_COMPILER=${CXX}"
      "-DLW_GEN=${GEN}" "-DLW_RUNTIME=${RUNTIME}" "-DLW_INCLUDE=${INCLUDE}"
      "-DLW_CMAKE=${LW_CMAKE}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configure failed:\n${out}${err}")
  endif()
  return()
endif()

execute_process(COMMAND "${CMAKE_COMMAND}" --build "${B}" --target "${CASE}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("---- build ${CASE}: exit ${rc}\n${out}${err}")
if(STEP STREQUAL "fail")
  if(rc EQUAL 0)
    message(FATAL_ERROR "${CASE} built; it must not")
  endif()
  if(NOT "${out}${err}" MATCHES "${EXPECT}")
    message(FATAL_ERROR "${CASE} failed without saying '${EXPECT}'")
  endif()
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${CASE} did not build")
endif()
execute_process(COMMAND "${WITH_REDIS}" "${B}/${CASE}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("---- run ${CASE}: exit ${rc}\n${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${CASE} ran its body without the lock")
endif()
